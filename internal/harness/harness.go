// Package harness starts the whole boxmaker harness as separate processes
// in a throwaway home, for the demo and the end-to-end tests: Podman's
// service, brokerd with the tool image, the stand-in model, inferproxy and
// loopd, each from the built binaries, and stops them all again, leaving no
// process and no container behind. It is development tooling: no role
// imports it, and it runs the binaries rather than linking them.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options say where the binaries are and where to put the home.
type Options struct {
	// Bin holds boxmaker, its role links and fakellama (just build).
	Bin string
	// Home is created; it should be new and short (socket paths are at
	// most 107 bytes). BOXMAKER_HOME is its home/; the owner's notes and
	// scratch folder are beside it, since no grant may reach the home.
	Home string
	// Log receives every process's output, each line prefixed with its name.
	Log io.Writer
	// TTLMs is brokerd's approval TTL (default 120000).
	TTLMs int
	// Llama, when set, runs llama.cpp's llama-server in place of the
	// stand-in model (llama.go).
	Llama *Llama
	// Upstream, when set, turns the model's host:port into the URL
	// inferproxy forwards to: a test puts its recorder in between this
	// way. Default "http://" + addr.
	Upstream func(addr string) (string, error)
	// Mattermost, when set, adds gatewayd, connected to that server with
	// the bot's token; brokerd sends it approvals and loopd listens for it
	// on run/gateway-loop/loop.sock (issue 14).
	Mattermost *Mattermost
	// State, when set, is a folder of the roles' state under
	// BOXMAKER_HOME (a fixture an earlier release wrote, testdata/state-*),
	// copied into the home before any role starts: the roles then load it
	// as they would after an upgrade (state.go).
	State string
	// Deployed, when set, runs on a deployment deploy apply made: each
	// role as its plan's user (deployed.go). Home then holds only the
	// owner's notes and scratch folder.
	Deployed *Deployed
}

// Mattermost is the server gatewayd talks to.
type Mattermost struct {
	URL    string
	Token  string   // the bot's; written to a 0600 file gatewayd.toml names
	Owners []string // Mattermost user ids
}

// Harness is a running set of processes.
type Harness struct {
	o       Options
	Home    string // BOXMAKER_HOME
	mu      sync.Mutex
	procs   []*proc
	podman  *proc
	modelAt string
	// upstream is inferproxy's upstream URL.
	upstream string
	// inferproxyConf waits for the model's address.
	inferproxyConf string
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// ModelAddr is the stand-in model's host:port.
func (h *Harness) ModelAddr() string { return h.modelAt }

// Paths of the running harness.
func (h *Harness) Notes() string      { return filepath.Join(h.o.Home, "notes") }
func (h *Harness) Scratch() string    { return filepath.Join(h.o.Home, "scratch") }
func (h *Harness) LoopSocket() string { return filepath.Join(h.Home, "run", "owner-loop", "loop.sock") }
func (h *Harness) AdminSocket() string {
	return filepath.Join(h.Home, "run", "owner-broker", "admin.sock")
}
func (h *Harness) GatewaySocket() string {
	return filepath.Join(h.Home, "run", "broker-gateway", "gateway.sock")
}
func (h *Harness) podmanSocket() string {
	if h.o.Deployed != nil {
		return filepath.Join(h.Home, "run", "broker-tools", "podman.sock")
	}
	return filepath.Join(h.Home, "podman", "podman.sock")
}

// Start creates the home and starts every piece; on error it stops what it
// started.
func Start(ctx context.Context, o Options) (_ *Harness, err error) {
	if o.TTLMs == 0 {
		o.TTLMs = 120000
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	h := &Harness{o: o, Home: filepath.Join(o.Home, "home")}
	defer func() {
		if err != nil {
			h.Stop()
		}
	}()
	if o.Deployed != nil {
		if err := h.startDeployed(ctx); err != nil {
			return nil, err
		}
		return h, nil
	}
	if err := h.writeHome(); err != nil {
		return nil, err
	}
	if err := h.copyState(); err != nil {
		return nil, err
	}
	if err := h.startPodman(ctx); err != nil {
		return nil, err
	}
	image, err := h.buildImage(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.writeConfigs(image); err != nil {
		return nil, err
	}
	if err := h.StartModel(ctx); err != nil {
		return nil, err
	}
	h.upstream = "http://" + h.modelAt
	if o.Upstream != nil {
		if h.upstream, err = o.Upstream(h.modelAt); err != nil {
			return nil, err
		}
	}
	if err := h.writeInferproxyConf(); err != nil {
		return nil, err
	}
	roles := []string{"inferproxy", "brokerd", "loopd"}
	if o.Mattermost != nil {
		roles = append(roles, "gatewayd")
	}
	for _, role := range roles {
		if err := h.StartRole(ctx, role); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// StartRole starts one role with its config and waits for its socket.
func (h *Harness) StartRole(ctx context.Context, role string) error {
	sockets := map[string]string{
		"inferproxy": filepath.Join(h.Home, "run", "loop-infer", "infer.sock"),
		"brokerd":    h.AdminSocket(),
		"loopd":      h.LoopSocket(),
		"gatewayd":   h.GatewaySocket(),
	}
	os.Remove(sockets[role]) // so the wait below sees the new one
	p, err := h.spawn(role, h.roleBin(role), "serve", "--config", h.etc(role+".toml"))
	if err != nil {
		return err
	}
	return h.waitSocket(ctx, p, sockets[role])
}

// StartModel starts the model (the stand-in, or llama-server with
// Options.Llama) and waits until it answers.
func (h *Harness) StartModel(ctx context.Context) error {
	if h.o.Llama != nil {
		return h.startLlama(ctx)
	}
	addrFile := filepath.Join(h.Home, "model.addr")
	os.Remove(addrFile)
	listen := "127.0.0.1:0"
	if h.modelAt != "" {
		listen = h.modelAt // a restart keeps the address inferproxy knows
	}
	p, err := h.spawn("model", filepath.Join(h.o.Bin, "fakellama"), "--listen", listen, "--addr-file", addrFile,
		"--notes", h.Notes(), "--scratch", h.Scratch())
	if err != nil {
		return err
	}
	return h.wait(ctx, p, "the model's address", func() bool {
		b, err := os.ReadFile(addrFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		h.modelAt = strings.TrimSpace(string(b))
		return true
	})
}

// Kill sends SIGKILL to the named process (a role, or "model") and waits
// for it: the crash the end-to-end tests recover from.
func (h *Harness) Kill(name string) error {
	p, err := h.running(name)
	if err != nil {
		return err
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// running is the named process (a role, or "model") while it runs: the
// latest started under that name.
func (h *Harness) running(name string) (*proc, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var p *proc
	for _, q := range h.procs {
		if q.name == name && !q.exited() {
			p = q
		}
	}
	if p == nil {
		return nil, fmt.Errorf("harness: no running %s", name)
	}
	return p, nil
}

// Bxctl runs bin/bxctl with args and this home's sockets in its environment.
func (h *Harness) Bxctl(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, h.roleBin("bxctl"), args...)
	cmd.Env = append(os.Environ(), "BOXMAKER_HOME="+h.Home)
	if h.o.Deployed != nil {
		cred, err := h.credFor("bxctl")
		if err != nil {
			return err
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Env = h.deployedEnv("bxctl")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	return cmd.Run()
}

// Stop ends every process, newest first (SIGTERM, then SIGKILL after 5 s),
// removes any container brokerd left, and stops Podman's service.
func (h *Harness) Stop() error {
	h.mu.Lock()
	procs := append([]*proc(nil), h.procs...)
	h.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		if procs[i] != h.podman {
			procs[i].stop()
		}
	}
	var err error
	if h.podman != nil {
		n, lerr := h.leftovers(true)
		if lerr != nil {
			err = lerr
		} else if n > 0 {
			err = fmt.Errorf("harness: removed %d container(s) left behind", n)
		}
		h.podman.stop()
		// The overlay driver bind-mounts its own directory, and the mount
		// outlives the service; it would keep the home from being removed.
		if h.o.Deployed == nil {
			_ = syscall.Unmount(filepath.Join(h.Home, "podman", "storage", "overlay"), syscall.MNT_DETACH)
		} else {
			h.killToolsUser()
		}
	}
	return err
}

// Leftovers counts boxmaker's containers that still exist: every container
// with a boxmaker.scope label, whichever brokerd made it and whether or not
// it was for a call (the startup probe's is not). It once listed only
// boxmaker.call, which brokerd never set, so it could never fail.
func (h *Harness) Leftovers() (int, error) { return h.leftovers(false) }

// LeftoversOfCalls is Leftovers less the containers brokerd made ahead for
// calls to come, which wait initialised, never started, with no
// boxmaker.call label (docs/decisions.md, "The next call's container is
// made ahead"): what a check made while brokerd runs counts. brokerd
// removes those too when it stops, so Stop counts every container.
func (h *Harness) LeftoversOfCalls() (int, error) {
	out, err := h.podmanCLI("ps", "-a", "--filter", "label=boxmaker.scope", "--format", `{{.State}}|{{index .Labels "boxmaker.call"}}`).Output()
	if err != nil {
		return 0, fmt.Errorf("harness: listing containers: %w", err)
	}
	n := 0
	for _, line := range strings.Fields(string(out)) {
		// ps writes the state capitalised ("Initialized").
		if !strings.EqualFold(line, "initialized|") {
			n++
		}
	}
	return n, nil
}

func (h *Harness) leftovers(remove bool) (int, error) {
	out, err := h.podmanCLI("ps", "-a", "-q", "--filter", "label=boxmaker.scope").Output()
	if err != nil {
		return 0, fmt.Errorf("harness: listing containers: %w", err)
	}
	ids := strings.Fields(string(out))
	if remove && len(ids) > 0 {
		_ = h.podmanCLI(append([]string{"rm", "-f"}, ids...)...).Run()
	}
	return len(ids), nil
}

// podmanCLI runs podman against this harness's service, for checks the
// tests make from outside (brokerd itself only uses the REST bindings).
func (h *Harness) podmanCLI(args ...string) *exec.Cmd {
	cmd := exec.Command("podman", append([]string{"--remote", "--url", "unix://" + h.podmanSocket()}, args...)...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(h.Home, "podman", "containers.conf"))
	if h.o.Deployed != nil {
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+h.etc("tools-containers.conf"))
	}
	return cmd
}

func (h *Harness) spawn(name, bin string, args ...string) (*proc, error) {
	return h.spawnIn("", name, bin, args...)
}

// spawnIn is spawn with dir as the working directory ("" for this one's).
func (h *Harness) spawnIn(dir, name, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BOXMAKER_HOME="+h.Home,
		"CONTAINERS_CONF="+filepath.Join(h.Home, "podman", "containers.conf"))
	w := &prefixWriter{w: h.o.Log, prefix: name + ": "}
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group, so stopping it stops its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if h.o.Deployed != nil {
		cred, err := h.credFor(name)
		if err != nil {
			return nil, err
		}
		cmd.SysProcAttr.Credential = cred
		cmd.Env = h.deployedEnv(name)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (h *Harness) waitSocket(ctx context.Context, p *proc, path string) error {
	return h.wait(ctx, p, path, func() bool {
		c, err := net.Dial("unix", path)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// wait polls ready until it holds, p exits, or 60 s pass.
func (h *Harness) wait(ctx context.Context, p *proc, what string, ready func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for !ready() {
		select {
		case <-p.done:
			return fmt.Errorf("harness: %s exited before %s was ready (%v)", p.name, what, p.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("harness: %s: %s not ready: %w", p.name, what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// prefixWriter writes each line with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	part   []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	for {
		i := strings.IndexByte(string(p.part), '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.part[:i]); err != nil {
			return 0, err
		}
		p.part = p.part[i+1:]
	}
}

var errNoImage = errors.New("harness: brokerd image build printed no image id")
