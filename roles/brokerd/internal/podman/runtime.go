// Package podman is brokerd's Runtime: one Podman container per tool call,
// through the Podman REST API's Go bindings (never by running podman),
// from the tool image whose id brokerd.toml names. The container gets the
// RunSpec's mounts and nothing else of the host, no network (an http_fetch
// gets its own egress proxy's socket), a read-only root, no capabilities,
// an unprivileged user and limits on time, memory, tasks, open files and
// output. The call returns only once nothing it started still runs: once
// its container is removed, or once its toolkit, the init of the
// container's PID namespace, is seen to exit on its own (exit.go), in
// which case the removal follows the call. A call like one before it (the
// same tool, the same mount sources, no secret, no egress) starts a
// container made for it after that call, never run until then (ahead.go).
//
// The bindings are built with the tags in docs/decisions.md ("Podman build
// tags"); the justfile sets them for every go command.
package podman

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containers/podman/v5/libpod/define"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/domain/entities/types"

	"boxmaker/roles/brokerd/internal/egress"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/stages"
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

	// protected are boxmaker's own files and folders, which no mount may
	// be, contain or lie inside (Protect).
	protected atomic.Pointer[[]string]
	// checked, when set (by tests), runs between checking a call's mount
	// sources and creating its container.
	checked func()
	// secrets is where the values of grants' secrets are read (secret.go).
	secrets atomic.Pointer[func(name string) ([]byte, error)]
	// removing counts the removals still running after their calls
	// (removeLater); Close waits for them. removingMu orders each Add
	// before or after a Wait, never during one (sync.WaitGroup's rule).
	removing   sync.WaitGroup
	removingMu sync.Mutex
	// ahead holds containers made for calls to come (ahead.go); aheadOff,
	// set by tests, makes none.
	ahead    aheadPool
	aheadOff atomic.Bool
	// unenforced are the limits the startup probe saw unenforced and
	// brokerd.toml accepts (judge), for Describe.
	unenforced []string
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
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("podman: [podman] %w", err)
	}
	scope, err := prepareStateDir(stateDir)
	if err != nil {
		return nil, err
	}
	profile, egressDir, err := prepareShared(cfg, stateDir)
	if err != nil {
		return nil, err
	}
	return newRuntime(ctx, cfg, log, scope, profile, egressDir)
}

func newRuntime(ctx context.Context, cfg Config, log io.Writer, scope, seccomp, egressDir string) (*Runtime, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("podman: [podman] %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	id, err := ResolveOrBuild(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	cfg.Image = id // "auto" is resolved once: every call runs that image
	r := &Runtime{cfg: cfg, log: log, scope: scope, seccomp: seccomp, egressDir: egressDir}
	if err := r.CheckLimits(ctx); err != nil {
		return nil, err
	}
	// The probe's container is gone before brokerd serves: a leftover
	// cleanup run now must not find it.
	r.waitRemovals()
	return r, nil
}

// Protect sets the paths no mount may be, contain or lie inside, however
// reached: brokerd's grants directory, BOXMAKER_HOME, its config file, the
// Podman service's socket and the like. brokerd serve calls it before it
// serves; every later call is checked against the list at the time.
func (r *Runtime) Protect(paths []string) {
	p := slices.Clone(paths)
	r.protected.Store(&p)
}

func (r *Runtime) protectedPaths() []string {
	if p := r.protected.Load(); p != nil {
		return *p
	}
	return nil
}

// Close removes the containers made ahead and waits for the removals of
// containers whose calls are over (removeLater); each is bounded by
// removeTimeout.
func (r *Runtime) Close() error {
	r.closeAhead()
	r.waitRemovals()
	return nil
}

// waitRemovals waits for the removals under way (removeLater).
func (r *Runtime) waitRemovals() {
	r.removingMu.Lock()
	defer r.removingMu.Unlock()
	r.removing.Wait()
}

// Run runs one call. A RunSpec that runner.Run did not build is refused.
func (r *Runtime) Run(ctx context.Context, s *runner.RunSpec) (runner.Output, error) {
	if !s.Valid() {
		return runner.Output{}, runner.Failed("podman: refused a RunSpec that runner.Run did not build")
	}
	// Every source is opened and checked before any container is made,
	// and held until the call is over (mountsrc.go).
	held, err := openSources(s, r.protectedPaths())
	if err != nil {
		return runner.Output{}, err
	}
	defer held.Close()
	if r.checked != nil {
		r.checked()
	}
	// The value is read now, at run time, and forgotten when the call ends.
	sec, err := r.readSecret(s)
	if err != nil {
		return runner.Output{}, err
	}
	defer sec.close()
	stages.Mark(ctx, "sources")
	c := r.containerFor(s.Tool().String())
	c.call, c.mounts = callLabel(s.Call()), s.Mounts()
	c.secretFile = sec != nil && sec.use.File
	var proxy *egress.Proxy
	if hosts, ok := s.Egress(); ok {
		if proxy, err = egress.StartWith(r.egressDir, hosts, sec.proxySecret()); err != nil {
			return runner.Output{}, runner.Unavailable("podman: cannot start the egress proxy: " + err.Error())
		}
		// The proxy lives exactly as long as the call.
		defer proxy.Close()
		if err := r.openEgressDir(proxy.Path()); err != nil {
			return runner.Output{}, runner.Unavailable("podman: cannot open the egress proxy's directory to the Podman service: " + err.Error())
		}
		c.egress, c.ca = proxy.Path(), proxy.CAPath()
	}
	req, err := requestFor(s.Args(), r.cfg.OutputBytes, held.toolkitMounts(), sec)
	if err != nil {
		return runner.Output{}, runner.Failed(err.Error())
	}
	// A file delivery's request line holds the value (base64).
	defer clear(req.line)
	ans, err := r.runAhead(ctx, c, req, held, s)
	if err != nil {
		// A failure's message may quote what the tool printed.
		var re *runner.Error
		if errors.As(err, &re) {
			re.Message = sec.redactText(re.Message) // nil-safe: no secret, no change
		}
		return runner.Output{}, err
	}
	if ans.Status != "result" {
		msg := ans.Text
		if proxy != nil {
			if refused := proxy.Refusals(); len(refused) > 0 {
				msg += " (egress proxy: " + strings.Join(refused, "; ") + ")"
			}
		}
		return runner.Output{}, runner.Failed(sec.redactText(msg))
	}
	// Truncated is brokerd's own count (parseAnswer), not the toolkit's
	// word. The result is redacted last, after the cut: what leaves
	// brokerd is what is checked.
	return runner.Output{Content: sec.redactText(ans.Text), Truncated: ans.Truncated}, nil
}

// runAhead runs the call in the container made ahead for it, if there is
// one (ahead.go), or else in one it creates; once a call like it has
// answered, it has the next one's container made.
func (r *Runtime) runAhead(ctx context.Context, c container, req request, held heldSources, s *runner.RunSpec) (answer, error) {
	key, byKey := r.aheadKey(c)
	if !byKey {
		return r.run(ctx, c, req, "")
	}
	ids := held.sourceIDs()
	ans, err := r.run(ctx, c, req, r.takeAhead(ctx, key, ids))
	var unusable *aheadUnusable
	if errors.As(err, &unusable) {
		// It never ran; the call goes on in a container of its own.
		fmt.Fprintf(r.log, "podman: cannot attach to the tool container made ahead (%v); making another\n", unusable.err)
		ans, err = r.run(ctx, c, req, "")
	}
	// Only after an answer: a call that failed (a mount refused, a
	// time limit) says nothing of the next.
	if err == nil && ans.Status == "result" {
		r.makeAhead(key, c, ids, s)
	}
	return ans, err
}

// run creates the container, attaches to it before starting it, sends the
// request and reads the answer line. It does not wait for Podman's exit
// status (Podman 4.3 reports it hundreds of milliseconds after the process
// ends, and the answer does not need it), but it returns only once
// nothing the call started still runs, whatever happened: brokerd writes
// the session state after Run returns. After an answer that is when the
// toolkit's exit is seen through a pidfd and the output has ended
// (endedAlone; the container is removed after the call); on every other
// path, when the container is removed. The answer is checked (parseAnswer)
// over everything the container wrote.
//
// madeAhead is a container made ahead for this call (ahead.go), or "" to
// create one. Such a container that cannot be attached to is an
// *aheadUnusable error: it was never started, so nothing of the call ran.
func (r *Runtime) run(ctx context.Context, c container, req request, madeAhead string) (ans answer, err error) {
	timeout := time.Duration(r.cfg.TimeoutMS) * time.Millisecond
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := r.connect(runCtx)
	if err != nil {
		return answer{}, err
	}
	stages.Mark(ctx, "connect")
	created, err := r.create(conn, c, madeAhead)
	if err != nil {
		// The service may have created it all the same (a timeout cut the
		// answer short): remove it by name. It was never started, so
		// nothing of the call runs whether or not that works (removeNow
		// logs a failure, and the next start removes the leftover).
		_ = r.removeNow(conn, c.name, nil)
		if runCtx.Err() != nil {
			return answer{}, r.stopped(ctx, timeout)
		}
		return answer{}, unavailable("cannot create the tool container", err)
	}
	stages.Mark(ctx, "create")
	out := newAnswerBuffer(req.answerLimit())
	attached := make(chan error, 1)
	ready := make(chan bool, 1)
	// The attach goroutine ends when the container's output ends, which
	// removing the container guarantees; removeNow waits for it.
	go func() {
		attached <- containers.Attach(conn, created.ID, bytes.NewReader(req.line), out, nil, ready, nil)
	}()
	// Remove whatever happens below, once (the answer path removes before
	// it parses, unless the toolkit's exit proved nothing of the call still
	// runs); a container that cannot be removed withholds the result.
	removed := sync.OnceValue(func() error { return r.removeNow(conn, created.ID, attached) })
	later := false
	defer func() {
		if later {
			r.removeLater(conn, created.ID)
		} else if rerr := removed(); rerr != nil {
			ans, err = answer{}, rerr
		}
	}()

	select {
	case <-ready:
	case err := <-attached:
		attached <- err // for removeNow
		if madeAhead != "" {
			return answer{}, &aheadUnusable{err}
		}
		return answer{}, unavailable("cannot attach to the tool container", err)
	case <-runCtx.Done():
		return answer{}, r.stopped(ctx, timeout)
	}
	stages.Mark(ctx, "attach")
	if err := containers.Start(conn, created.ID, nil); err != nil {
		if runCtx.Err() != nil {
			return answer{}, r.stopped(ctx, timeout)
		}
		// Never tried again: the start may have happened all the same.
		return answer{}, unavailable("cannot start the tool container", err)
	}
	stages.Mark(ctx, "start")
	pid := make(chan int, 1)
	go func() { pid <- initPid(conn, created.ID) }()
	select {
	case <-out.done:
	case err := <-attached:
		attached <- err
	case <-runCtx.Done():
		return answer{}, r.stopped(ctx, timeout)
	}
	if b, over := out.bytes(); over {
		return answer{}, runner.Failed(fmt.Sprintf("the tool's answer was longer than %d bytes and was cut off", out.limit))
	} else if bytes.IndexByte(b, '\n') < 0 {
		return answer{}, runner.Failed(r.why(conn, created.ID, errNoAnswer))
	}
	stages.Mark(ctx, "answer")
	if later = r.endedAlone(runCtx, pid, attached); !later {
		if err := removed(); err != nil {
			return answer{}, err
		}
	}
	stages.Mark(ctx, "end")
	b, over := out.bytes()
	if over {
		return answer{}, runner.Failed(fmt.Sprintf("the tool's answer was longer than %d bytes and was cut off", out.limit))
	}
	if ans, err = parseAnswer(b, req); err != nil {
		fmt.Fprintf(r.log, "podman: refused the answer of tool container %s: %v; %s\n", short(created.ID), err, runbook.See("toolkit-answer-refused"))
		return answer{}, runner.Failed(fmt.Sprintf("the tool's answer was refused (%v); nothing of it is used", err))
	}
	return ans, nil
}

// create creates c's container, or takes ready's, made ahead.
func (r *Runtime) create(conn context.Context, c container, ready string) (types.ContainerCreateResponse, error) {
	if ready != "" {
		return types.ContainerCreateResponse{ID: ready}, nil
	}
	return containers.CreateWithSpec(conn, specFor(r.cfg, c), nil)
}

// aheadUnusable is a container made ahead that could not be attached to.
type aheadUnusable struct{ err error }

func (e *aheadUnusable) Error() string {
	return "the container made ahead is unusable: " + e.err.Error()
}

// stopped is the error for a run past its time, or cut short by brokerd
// stopping.
func (r *Runtime) stopped(ctx context.Context, timeout time.Duration) error {
	if ctx.Err() != nil {
		return runner.Unavailable("the call was cancelled (brokerd is stopping); its container was removed")
	}
	return runner.Failed(fmt.Sprintf("the tool did not finish within %s and was stopped", timeout))
}

// removeNow removes the container (by id or name) and waits for its
// attach stream, if any, to end. Podman removes a running container only
// after stopping it: runc kills the container's init, the kernel lets the
// init of a PID namespace finish exiting only once every other process in
// it is gone, and Podman waits for that exit. So a nil error means nothing
// the call started is still running. An error says the container could not be
// removed within removeTimeout; the call's result is then withheld, and
// brokerd's next start removes the leftover.
func (r *Runtime) removeNow(conn context.Context, id string, attached chan error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(conn), removeTimeout)
	defer cancel()
	if err := remove(ctx, id); err != nil {
		fmt.Fprintf(r.log, "podman: removing tool container %s: %v; %s\n", short(id), err, runbook.See("tool-container-not-removed"))
		return runner.Unavailable(fmt.Sprintf("podman: tool container %s could not be removed (%v), so its result is withheld; %s",
			short(id), err, runbook.See("tool-container-not-removed")))
	}
	if attached == nil {
		return nil
	}
	select {
	case err := <-attached:
		attached <- err // removeNow may be the second to read it
	case <-ctx.Done():
		fmt.Fprintf(r.log, "podman: the output of tool container %s did not end after its removal\n", short(id))
	}
	return nil
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
