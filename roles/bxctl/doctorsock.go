package bxctl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// Root's look at the sockets: how long a listener has to close root's
// connection, and how many sockets are looked at (each role may make
// files in its own run directory; a flood of them must not stall doctor,
// or deploy upgrade, which runs it).
const (
	peerWait   = 2 * time.Second
	maxSockets = 64
)

// sockets, as root, dials every socket under <home>/run, all at once: each
// must be a socket (not a link), be listened on by the user who owns the
// file, and, unless it is Podman's (which checks no peer; the modes of its
// directory guard it), close root's connection before sending a byte:
// unixsock refuses a peer no [peers] rule names.
func (d *doctor) sockets() {
	paths, _ := filepath.Glob(filepath.Join(d.home, "run", "*", "*.sock"))
	if len(paths) == 0 {
		d.add("sockets", false, "no socket under "+filepath.Join(d.home, "run"), runbook.See("socket-unavailable"))
		return
	}
	if len(paths) > maxSockets {
		d.add("sockets", false, fmt.Sprintf("%d files named *.sock under %s, more than the %d a deployment has room for: only the first %d are checked",
			len(paths), filepath.Join(d.home, "run"), maxSockets, maxSockets), runbook.See("socket-unavailable"))
		paths = paths[:maxSockets]
	}
	results := make([]wire.HealthCheck, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			ok, detail, see := checkSocket(p)
			results[i] = wire.HealthCheck{Name: "socket " + p, OK: ok, Detail: detail, Runbook: see}
		})
	}
	wg.Wait()
	for _, r := range results {
		d.add(r.Name, r.OK, r.Detail, r.Runbook)
	}
}

func checkSocket(p string) (ok bool, detail, see string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return false, err.Error(), runbook.See("socket-unavailable")
	}
	if fi.Mode().Type() != os.ModeSocket {
		return false, fmt.Sprintf("is not a socket (%s)", fi.Mode().Type()), runbook.See("socket-unavailable")
	}
	owner := fi.Sys().(*syscall.Stat_t).Uid
	c, err := net.DialTimeout("unix", p, time.Second)
	if err != nil {
		return false, "does not answer: " + err.Error(), runbook.See("socket-unavailable")
	}
	defer c.Close()
	listener, err := peerUID(c.(*net.UnixConn))
	if err != nil {
		return false, "its listener cannot be told (SO_PEERCRED): " + err.Error(), runbook.See("socket-unavailable")
	}
	if listener != owner {
		return false, fmt.Sprintf("listened on by %s, but the file is %s's", userOf(listener), userOf(owner)), runbook.See("socket-unavailable")
	}
	if filepath.Base(p) == "podman.sock" {
		return true, fmt.Sprintf("answers as %s (Podman checks no peer: the modes of its directory guard it)", userOf(listener)), ""
	}
	_ = c.SetReadDeadline(time.Now().Add(peerWait))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return true, fmt.Sprintf("answers as %s, and its [peers] rule refuses root", userOf(listener)), ""
	case n > 0:
		return false, fmt.Sprintf("let root in and wrote to it (listened on by %s): its [peers] rule admits a user it should not", userOf(listener)), runbook.See("peer-refused")
	case errors.As(err, &ne) && ne.Timeout():
		return false, fmt.Sprintf("let root in (listened on by %s): its [peers] rule admits a user it should not", userOf(listener)), runbook.See("peer-refused")
	}
	return false, "reading from it: " + err.Error(), runbook.See("socket-unavailable")
}

// peerUID is the uid of the process that listens on c's socket, as the
// kernel recorded it.
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return cred.Uid, nil
}

func userOf(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return "uid " + strconv.FormatUint(uint64(uid), 10)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
