package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"boxmaker/deploy"
)

// Deployed runs the harness on a deployment made by deploy apply (issue 13):
// every role as its plan's user, from the plan's binary and links, with the
// plan's home, configuration and sockets, and rootless Podman as the tools
// user. The stand-in model runs as root: it is the owner's model server,
// not part of boxmaker.
type Deployed struct {
	Plan deploy.Plan
	// Owner is a user in the plan's owner group: bxctl runs as it.
	Owner string
}

// creds are the credentials a deployed process runs with, by process name
// (a role, "podman" for the tools user's service, "bxctl" for the owner).
func (h *Harness) credFor(name string) (*syscall.Credential, error) {
	d := h.o.Deployed
	who := map[string]string{"podman": d.Plan.UserFor("tools"), "bxctl": d.Owner, "image": d.Plan.UserFor("brokerd")}[name]
	if who == "" {
		for _, u := range d.Plan.Users {
			if u.Role == name {
				who = u.Name
			}
		}
	}
	if who == "" {
		return nil, nil // the model: root
	}
	return Credential(who)
}

// Credential is the uid, primary gid and supplementary groups of a user,
// as its login would have them.
func Credential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		g, _ := strconv.Atoi(id)
		c.Groups = append(c.Groups, uint32(g))
	}
	return c, nil
}

func (h *Harness) etc(name string) string {
	if h.o.Deployed != nil {
		return filepath.Join(h.o.Deployed.Plan.Etc, name)
	}
	return filepath.Join(h.Home, "etc", name)
}

// roleBin is a role's executable: the plan's link, deployed.
func (h *Harness) roleBin(role string) string {
	if h.o.Deployed != nil {
		return filepath.Join(h.o.Deployed.Plan.Bin, role)
	}
	return filepath.Join(h.o.Bin, role)
}

// toolsRuntimeDir is the tools user's XDG_RUNTIME_DIR (systemd's
// RuntimeDirectory= for the unit).
func (h *Harness) toolsRuntimeDir() string { return filepath.Join(h.o.Home, "xdg-tools") }

// deployedEnv is the environment of a deployed process.
func (h *Harness) deployedEnv(name string) []string {
	p := h.o.Deployed.Plan
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "BOXMAKER_HOME=" + p.Home}
	if name == "podman" {
		env = append(env, "HOME="+filepath.Join(p.Home, "tools"), "XDG_RUNTIME_DIR="+h.toolsRuntimeDir(),
			"CONTAINERS_CONF="+filepath.Join(p.Etc, "tools-containers.conf"))
	}
	return env
}

// writeDeployedHome writes what the owner would: the core memory, the
// grants, the notes and scratch folder beside the home.
func (h *Harness) writeDeployedHome() error {
	p := h.o.Deployed.Plan
	tools, err := user.Lookup(p.UserFor("tools"))
	if err != nil {
		return err
	}
	files := []struct {
		path, text, owner, group string
		mode                     os.FileMode
	}{
		{filepath.Join(p.Home, "memory", "core.md"), "The owner is trying boxmaker's demo.\n", "root", p.UserFor("loopd"), 0o640},
		{filepath.Join(h.Notes(), "today.md"), "# Today\n\n- Water the plants.\n- Call Ana about the boat.\n", "root", "root", 0o644},
		{filepath.Join(h.Scratch(), "build.log"), "ok\n", "root", "root", 0o644},
		{filepath.Join(h.Scratch(), "todo.txt"), "nothing yet\n", "root", "root", 0o644},
	}
	for name, text := range grants {
		files = append(files, struct {
			path, text, owner, group string
			mode                     os.FileMode
		}{filepath.Join(p.Etc, "grants", name), h.fill(text), "root", p.UserFor("brokerd"), 0o640})
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.path, []byte(f.text), f.mode); err != nil {
			return err
		}
		if err := chownNames(f.path, f.owner, f.group); err != nil {
			return err
		}
	}
	// The tools run as nobody inside the container, which rootless Podman
	// maps into the tools user's subordinate range: the scratch folder is
	// given to that host uid, which owns nothing else.
	hostUID, err := deploy.SubordinateID("/etc/subuid", tools.Username, 65534)
	if err != nil {
		return err
	}
	hostGID, err := deploy.SubordinateID("/etc/subgid", tools.Username, 65534)
	if err != nil {
		return err
	}
	if err := os.Chown(h.Scratch(), hostUID, hostGID); err != nil {
		return err
	}
	uid, _ := strconv.Atoi(tools.Uid)
	gid, _ := strconv.Atoi(tools.Gid)
	if err := os.Mkdir(h.toolsRuntimeDir(), 0o700); err != nil {
		return err
	}
	return os.Chown(h.toolsRuntimeDir(), uid, gid)
}

func chownNames(path, owner, group string) error {
	uid, gid, err := deploy.IDs(owner, group)
	if err != nil {
		return err
	}
	return os.Chown(path, uid, gid)
}

// writeDeployedConfigs fills in what deploy apply's seeds leave to the
// owner: the tool image, the model server, the approval lifetime, the
// Mattermost server. The rest (paths, sockets, [peers]) is the plan's.
func (h *Harness) writeDeployedConfigs(image string) error {
	p := h.o.Deployed.Plan
	seed := map[string]string{}
	for _, x := range p.Paths {
		if x.Content == deploy.ContentSeed {
			seed[filepath.Base(x.Path)] = x.Text
		}
	}
	// As the seed's comment tells an owner on cgroup v1 (these machines):
	// rootless Podman sets no per-call memory, pids or cpu limit there. It
	// is uncommented on any host: an accepted limit the probe does see
	// enforced changes nothing, and the deployed tests are about users,
	// not limits (roles/brokerd/internal/podman tests those).
	brokerd := strings.Replace(seed["brokerd.toml"], "# accept_unenforced = ", "accept_unenforced = ", 1)
	configs := map[string]string{
		"brokerd.toml": strings.Replace(brokerd, "image = \"\"\n",
			fmt.Sprintf("image = %q\nuser = \"65534:65534\"\n", image), 1) +
			fmt.Sprintf("\n[approvals]\nttl_ms = %d\n", h.o.TTLMs),
		"loopd.toml":      seed["loopd.toml"],
		"inferproxy.toml": strings.Replace(seed["inferproxy.toml"], "http://127.0.0.1:8080", h.upstream, 1),
	}
	if m := h.o.Mattermost; m != nil {
		// The token as systemd hands it over (LoadCredential=): a file of
		// gatewayd's user, mode 0400, at the path the seed names, moved
		// under this harness's root.
		token := filepath.Join(h.o.Home, "credentials", "mattermost-token")
		if err := os.MkdirAll(filepath.Dir(token), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(token, []byte(m.Token+"\n"), 0o400); err != nil {
			return err
		}
		if err := chownNames(token, p.UserFor("gatewayd"), p.UserFor("gatewayd")); err != nil {
			return err
		}
		gw := seed["gatewayd.toml"]
		for old, new := range map[string]string{
			`url = "https://mattermost.invalid"`: fmt.Sprintf("url = %q", m.URL),
			"owners = []":                        fmt.Sprintf("owners = [\"%s\"]", strings.Join(m.Owners, `", "`)),
		} {
			gw = strings.Replace(gw, old, new, 1)
		}
		gw = regexp.MustCompile(`token_file = "[^"]*"`).ReplaceAllString(gw, fmt.Sprintf("token_file = %q", token))
		configs["gatewayd.toml"] = gw
	}
	for name, text := range configs {
		// In place: the file keeps the owner, group and mode apply gave it.
		if err := os.WriteFile(h.etc(name), []byte(text), 0o640); err != nil {
			return err
		}
	}
	return nil
}

// startDeployed is Start on a deployment.
func (h *Harness) startDeployed(ctx context.Context) error {
	h.Home = h.o.Deployed.Plan.Home
	if err := h.writeDeployedHome(); err != nil {
		return err
	}
	sock := filepath.Join(h.Home, "run", "broker-tools", "podman.sock")
	p, err := h.spawnIn(filepath.Join(h.Home, "tools"), "podman", "podman", "system", "service", "--time=0", "unix://"+sock)
	if err != nil {
		return err
	}
	h.podman = p
	if err := h.waitSocket(ctx, p, sock); err != nil {
		return err
	}
	if err := h.toolsStartPost(ctx, p.cmd.Process.Pid); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, h.roleBin("brokerd"), "image", "build", "--config", h.etc("brokerd.toml"))
	cred, err := h.credFor("image")
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = h.deployedEnv("image")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &prefixWriter{w: h.o.Log, prefix: "image: "}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("harness: brokerd image build as %s: %w", h.o.Deployed.Plan.UserFor("brokerd"), err)
	}
	image := imageLine.FindString(out.String())
	if image == "" {
		return errNoImage
	}
	if err := h.StartModel(ctx); err != nil {
		return err
	}
	h.upstream = "http://" + h.modelAt
	if err := h.writeDeployedConfigs(image); err != nil {
		return err
	}
	roles := []string{"inferproxy", "brokerd", "loopd"}
	if h.o.Mattermost != nil {
		roles = append(roles, "gatewayd")
	}
	for _, role := range roles {
		if err := h.StartRole(ctx, role); err != nil {
			return err
		}
	}
	return nil
}

// killToolsUser ends every process of the tools user: rootless Podman
// leaves a pause process holding its user namespace, outside the service's
// process group (systemd's KillMode=mixed does the same for the unit).
func (h *Harness) killToolsUser() {
	u, err := user.Lookup(h.o.Deployed.Plan.UserFor("tools"))
	if err != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pids := processesOf(u.Uid)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processesOf lists the processes whose real uid is uid, from /proc.
func processesOf(uid string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" && f[1] == uid {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// toolsStartPost runs the tools unit's ExecStartPost= as the tools user, as
// systemd would: it makes Podman's socket reachable by brokerd's group.
// systemd replaces ${MAINPID} in the line with Podman's pid; here the shell
// does, from the environment.
func (h *Harness) toolsStartPost(ctx context.Context, podmanPid int) error {
	for _, u := range h.o.Deployed.Plan.Units {
		for _, st := range u.Service {
			if u.Role != "tools" || st.Key != "ExecStartPost" {
				continue
			}
			script, ok := strings.CutPrefix(st.Value, `/bin/sh -c "`)
			if !ok || !strings.HasSuffix(script, `"`) {
				return fmt.Errorf("harness: the tools unit's ExecStartPost= is not /bin/sh -c \"...\": %s", st.Value)
			}
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", strings.TrimSuffix(script, `"`))
			cred, err := h.credFor("podman")
			if err != nil {
				return err
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			cmd.Env = append(h.deployedEnv("podman"), "MAINPID="+strconv.Itoa(podmanPid))
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("harness: the tools unit's ExecStartPost=: %w: %s", err, out)
			}
			return nil
		}
	}
	return fmt.Errorf("harness: the plan's tools unit has no ExecStartPost=")
}
