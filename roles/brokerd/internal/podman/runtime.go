// Package podman is brokerd's Runtime: one Podman container per tool call,
// through the Podman REST API's Go bindings (never by running podman),
// from the tool image whose id brokerd.toml names. The container gets the
// RunSpec's mounts and nothing else of the host, no network (an http_fetch
// gets its own egress proxy's socket), a read-only root, no capabilities,
// an unprivileged user and limits on time, memory, tasks, open files and
// output; it is removed after the call whatever happens.
//
// The bindings are built with the tags in docs/decisions.md ("Podman build
// tags"); the justfile sets them for every go command.
package podman

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/containers/podman/v5/libpod/define"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"

	"boxmaker/roles/brokerd/internal/egress"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/runbook"
)

// Runtime runs tool calls in Podman containers. It is safe for concurrent
// use; every call gets its own connection to the service, since the
// bindings' attach replaces the connection's transport.
type Runtime struct {
	cfg   Config
	log   io.Writer
	scope string // labelScope's value: this brokerd instance's (instance.go)
	// seccomp is the seccomp profile's path (seccomp.go).
	seccomp string
	// egressDir is where egress proxies make their socket directories;
	// "" is the system's temporary directory.
	egressDir string

	// reaping counts the goroutines that remove finished containers after
	// their answer has gone back; Close waits for them.
	reaping sync.WaitGroup
}

// removeTimeout bounds removing one container, after its call is over.
const removeTimeout = 30 * time.Second

// New checks cfg, connects to the Podman service, checks that the tool
// image is the one cfg names, and runs a probe container to see that the
// limits hold. brokerd calls it at startup; an error says what is wrong
// and ends with its runbook line. stateDir is brokerd's own directory for
// the runtime: its instance id, which scopes its containers, and the
// seccomp profile (instance.go).
func New(ctx context.Context, cfg Config, log io.Writer, stateDir string) (*Runtime, error) {
	scope, profile, err := prepareStateDir(stateDir)
	if err != nil {
		return nil, err
	}
	return newRuntime(ctx, cfg, log, scope, profile)
}

func newRuntime(ctx context.Context, cfg Config, log io.Writer, scope, seccomp string) (*Runtime, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("podman: [podman] %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	r := &Runtime{cfg: cfg, log: log, scope: scope, seccomp: seccomp}
	if err := CheckImage(ctx, cfg); err != nil {
		return nil, err
	}
	if err := r.CheckLimits(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Close waits until every container of a finished call is removed.
func (r *Runtime) Close() error {
	r.reaping.Wait()
	return nil
}

// Run runs one call. A RunSpec that runner.Run did not build is refused.
func (r *Runtime) Run(ctx context.Context, s *runner.RunSpec) (runner.Output, error) {
	if !s.Valid() {
		return runner.Output{}, runner.Failed("podman: refused a RunSpec that runner.Run did not build")
	}
	req, err := requestFor(s.Args(), r.cfg.OutputBytes)
	if err != nil {
		return runner.Output{}, runner.Failed(err.Error())
	}
	c := r.containerFor(s.Tool().String())
	c.call, c.mounts = callLabel(s.Call()), s.Mounts()
	var proxy *egress.Proxy
	if hosts, ok := s.Egress(); ok {
		if proxy, err = egress.Start(r.egressDir, hosts); err != nil {
			return runner.Output{}, runner.Unavailable("podman: cannot start the egress proxy: " + err.Error())
		}
		// The proxy lives exactly as long as the call.
		defer proxy.Close()
		c.egress = proxy.Path()
	}
	ans, err := r.run(ctx, c, req)
	if err != nil {
		return runner.Output{}, err
	}
	if ans.Status != "result" {
		msg := ans.Text
		if proxy != nil {
			if refused := proxy.Refusals(); len(refused) > 0 {
				msg += " (egress proxy: " + strings.Join(refused, "; ") + ")"
			}
		}
		return runner.Output{}, runner.Failed(msg)
	}
	return runner.Output{Content: ans.Text, Truncated: ans.Truncated}, nil
}

// run creates the container, attaches to it before starting it, sends the
// request and reads the answer line. It returns as soon as the line is
// complete: Podman 4.3 reports the exit status hundreds of milliseconds
// after the process ends, and the answer does not need it. The container
// is removed in the background, by a goroutine Close waits for.
func (r *Runtime) run(ctx context.Context, c container, req []byte) (toolkitResponse, error) {
	timeout := time.Duration(r.cfg.TimeoutMS) * time.Millisecond
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := r.connect(runCtx)
	if err != nil {
		return toolkitResponse{}, err
	}
	created, err := containers.CreateWithSpec(conn, specFor(r.cfg, c), nil)
	if err != nil {
		// The service may have created it all the same (a timeout cut the
		// answer short): remove it by name.
		r.reap(conn, c.name, nil)
		if runCtx.Err() != nil {
			return toolkitResponse{}, r.stopped(ctx, timeout)
		}
		return toolkitResponse{}, unavailable("cannot create the tool container", err)
	}
	out := newAnswerBuffer(int(6*r.cfg.OutputBytes) + 64<<10) // JSON escaping at most sextuples text
	attached := make(chan error, 1)
	ready := make(chan bool, 1)
	// The attach goroutine ends when the container's output ends, which
	// removing the container guarantees; reap waits for it.
	go func() { attached <- containers.Attach(conn, created.ID, bytes.NewReader(req), out, nil, ready, nil) }()
	// Remove whatever happens below, once the answer is in hand.
	defer r.reap(conn, created.ID, attached)

	select {
	case <-ready:
	case err := <-attached:
		attached <- err // for reap
		return toolkitResponse{}, unavailable("cannot attach to the tool container", err)
	case <-runCtx.Done():
		return toolkitResponse{}, r.stopped(ctx, timeout)
	}
	if err := containers.Start(conn, created.ID, nil); err != nil {
		if runCtx.Err() != nil {
			return toolkitResponse{}, r.stopped(ctx, timeout)
		}
		return toolkitResponse{}, unavailable("cannot start the tool container", err)
	}
	select {
	case <-out.done:
	case err := <-attached:
		attached <- err
	case <-runCtx.Done():
		return toolkitResponse{}, r.stopped(ctx, timeout)
	}
	b, over := out.bytes()
	if over {
		return toolkitResponse{}, runner.Failed(fmt.Sprintf("the tool's answer was longer than %d bytes and was cut off", out.limit))
	}
	ans, err := parseAnswer(b)
	if err != nil {
		return toolkitResponse{}, runner.Failed(r.why(conn, created.ID, err))
	}
	return ans, nil
}

// stopped is the error for a run past its time, or cut short by brokerd
// stopping.
func (r *Runtime) stopped(ctx context.Context, timeout time.Duration) error {
	if ctx.Err() != nil {
		return runner.Unavailable("the call was cancelled (brokerd is stopping); its container was removed")
	}
	return runner.Failed(fmt.Sprintf("the tool did not finish within %s and was stopped", timeout))
}

// reap removes the container (by id or name) and waits for its attach
// stream, if any, to end, in a goroutine of its own that Close waits for.
func (r *Runtime) reap(conn context.Context, id string, attached <-chan error) {
	r.reaping.Add(1)
	go func() {
		defer r.reaping.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(conn), removeTimeout)
		defer cancel()
		if err := remove(ctx, id); err != nil {
			fmt.Fprintf(r.log, "podman: removing tool container %s: %v (brokerd removes leftovers at its next start)\n", short(id), err)
		}
		if attached == nil {
			return
		}
		select {
		case <-attached:
		case <-ctx.Done():
			fmt.Fprintf(r.log, "podman: the output of tool container %s did not end after its removal\n", short(id))
		}
	}()
}

// remove kills and removes one container; one that is already gone is
// not an error. Podman 4.3 refuses a forced removal that races the
// container's own exit ("container state improper"), so a failure is
// tried again, a few times.
func remove(ctx context.Context, id string) error {
	var err error
	for wait := 20 * time.Millisecond; ; wait *= 3 {
		_, err = containers.Remove(ctx, id, new(containers.RemoveOptions).WithForce(true).WithIgnore(true).WithVolumes(true).WithTimeout(0))
		if err == nil || wait > time.Second {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// why says, for a container that gave no usable answer, what is known of
// how it ended: out of memory, killed, or its exit status.
func (r *Runtime) why(conn context.Context, id string, answerErr error) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(conn), 5*time.Second)
	defer cancel()
	// Podman learns of the exit late; wait for it, on this failure path only.
	_, _ = containers.Wait(ctx, id, new(containers.WaitOptions).WithCondition([]define.ContainerStatus{define.ContainerStateStopped, define.ContainerStateExited}))
	data, err := containers.Inspect(ctx, id, nil)
	if err != nil || data.State == nil {
		return fmt.Sprintf("the tool ended without an answer (%v)", answerErr)
	}
	switch st := data.State; {
	case st.OOMKilled:
		return fmt.Sprintf("the tool ran out of memory (limit %d MiB) and was killed", r.cfg.MemoryBytes>>20)
	case st.ExitCode == 137:
		return "the tool was killed (exit status 137); it may have hit its process or memory limit"
	default:
		return fmt.Sprintf("the tool ended without an answer (%v; exit status %d)", answerErr, st.ExitCode)
	}
}

// connect opens a connection of its own to the service.
func (r *Runtime) connect(ctx context.Context) (context.Context, error) {
	conn, err := bindings.NewConnection(ctx, r.cfg.Socket)
	if err != nil {
		return nil, unavailable("the Podman service at "+r.cfg.Socket+" is not reachable", err)
	}
	return conn, nil
}

func unavailable(what string, err error) error {
	return runner.Unavailable(fmt.Sprintf("podman: %s: %v; %s", what, err, runbook.See("podman-unavailable")))
}

func newName() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "boxmaker-" + hex.EncodeToString(b[:])
}

func short(id string) string { return id[:min(12, len(id))] }

var _ runner.Runtime = (*Runtime)(nil)
