package toolkit

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
)

// probe reports what the container's process can see of its own limits and
// privileges, one "name value" line each, for brokerd's startup check:
// brokerd does not believe a limit it cannot see enforced (design card).
// The model cannot reach it: policy knows only the four tools.
func probe() Response {
	var b strings.Builder
	line := func(name, value string) { fmt.Fprintf(&b, "%s %s\n", name, value) }
	line("uid", fmt.Sprint(os.Getuid()))
	line("gid", fmt.Sprint(os.Getgid()))
	line("memory", cgroupValue("memory.max", "memory/memory.limit_in_bytes"))
	line("pids", cgroupValue("pids.max", "pids/pids.max"))
	line("nofile", rlimit(syscall.RLIMIT_NOFILE))
	line("nproc", rlimit(6)) // RLIMIT_NPROC, which package syscall does not name
	status := procStatus()
	line("capeff", status["CapEff"])
	line("nonewprivs", status["NoNewPrivs"])
	line("interfaces", interfaces())
	line("rootfs", rootfsMode())
	probeContainment(line)
	return result(b.String())
}

// cgroupValue reads a limit from cgroup v2's unified file or cgroup v1's
// controller file, as the container sees them under /sys/fs/cgroup.
func cgroupValue(v2, v1 string) string {
	for _, p := range []string{"/sys/fs/cgroup/" + v2, "/sys/fs/cgroup/" + v1} {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return "unknown"
}

func rlimit(which int) string {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(which, &r); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d/%d", r.Cur, r.Max)
}

func procStatus() map[string]string {
	m := map[string]string{"CapEff": "unknown", "NoNewPrivs": "unknown"}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok {
			if _, want := m[k]; want {
				m[k] = strings.TrimSpace(v)
			}
		}
	}
	return m
}

func interfaces() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return "unknown"
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	return strings.Join(names, ",")
}

// rootfsMode says how the root filesystem is mounted: "ro" or "rw".
func rootfsMode() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/", &st); err != nil {
		return "unknown"
	}
	const stRdonly = 1 // ST_RDONLY
	if st.Flags&stRdonly != 0 {
		return "ro"
	}
	return "rw"
}
