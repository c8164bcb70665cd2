// Package serve is `brokerd serve`: the audit startup check, the two
// sockets, one goroutine per connection, and the approval sweep. Every
// goroutine it starts is stopped and waited for by Stop.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"boxmaker/audit"
	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/admin"
	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/roles/brokerd/internal/broker"
	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/gateway"
	"boxmaker/roles/brokerd/internal/jobrun"
	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/stages"
	"boxmaker/roles/brokerd/internal/state"
	"boxmaker/runbook"
	"boxmaker/unixsock"
	"boxmaker/wire"
)

// Options are what Start needs.
type Options struct {
	Config      config.Config
	AcceptBreak bool
	// Runtime runs allowed calls. When it is nil, OpenRuntime makes it once
	// the audit log's lock is held, so a second brokerd never touches the
	// first one's containers.
	Runtime     runner.Runtime
	OpenRuntime func() (runner.Runtime, error)
	// Stderr gets startup lines and the owner's notices.
	Stderr io.Writer
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// Test seams. AuditOpenFile is audit.Options.OpenFile; States replaces
	// the state files under <home>/broker/sessions; RequestTimeout (the
	// config's [sockets] request_timeout_ms when zero) bounds the wait for
	// a request frame; SweepEvery (1 s when zero) is how often expired
	// approvals are ended.
	AuditOpenFile func(name string, flag int, perm fs.FileMode) (audit.File, error)
	States        broker.States
	// Floor replaces the taint floor in <home>/broker/floor.json.
	Floor          broker.Floor
	RequestTimeout time.Duration
	SweepEvery     time.Duration
	// Gateway shortens the gateway client's intervals (gateway.Options'
	// HeadEvery, RetryMin, RetryMax and EndGrace; the defaults when zero).
	Gateway GatewayTiming
	// JobsClock is the job scheduler's clock (jobs.RealClock when nil).
	JobsClock jobs.Clock
	// Stages, when set, times every tool request on broker.sock: it is
	// given each one's clock once the answer is sent (the benchmarks of
	// issue 26).
	Stages func(*stages.Clock)
}

// GatewayTiming are the gateway client's intervals, for tests.
type GatewayTiming struct {
	HeadEvery, RetryMin, RetryMax, EndGrace time.Duration
}

// Server is a running brokerd.
type Server struct {
	broker         *broker.Broker
	stages         func(*stages.Clock) // Options.Stages
	admin          *admin.Admin
	gateway        *gateway.Client // nil without [sockets] gateway
	audit          *audit.Writer
	requestTimeout time.Duration
	stderr         io.Writer
	logMu          sync.Mutex

	cancel context.CancelFunc
	wg     sync.WaitGroup
	lns    []*unixsock.Listener
	slots  []*slots // each listener's connection cap
}

// HeadFile is where brokerd keeps the audit log's head: in its own state,
// outside the audit directory, so that emptying or rewriting that directory
// does not take the head with it.
func HeadFile(home string) string { return filepath.Join(home, "broker", "audit-head") }

// Start runs the audit startup check, then listens on both sockets and
// serves until Stop. Open's errors are returned as they are, so the caller
// can tell audit.ErrAlreadyRunning, audit.ErrChainBroken,
// audit.ErrHeadMismatch and audit.ErrNothingToAccept apart.
func Start(o Options) (*Server, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	cfg := o.Config
	defaultSockets(&cfg.Sockets)
	limit, err := raiseNoFile()
	if err != nil {
		return nil, fmt.Errorf("reading the file descriptor limit: %w", err)
	}
	if err := checkBudget(cfg.Sockets, limit); err != nil {
		return nil, err
	}
	// The secrets directory first: an unsafe one refuses the start before
	// anything is opened or written (issue 15). Its error ends with the
	// runbook line.
	secretsDir := cfg.Paths.Secrets
	secretsMissing, err := policy.CheckSecretsDir(secretsDir)
	if err != nil {
		return nil, err
	}
	w, rep, err := audit.Open(filepath.Join(cfg.Paths.Home, "audit"),
		audit.Options{AcceptBreak: o.AcceptBreak, Now: now, OpenFile: o.AuditOpenFile, HeadFile: HeadFile(cfg.Paths.Home),
			RanBefore: func() string { return ranBefore(cfg.Paths.Home) }})
	if err != nil {
		return nil, err
	}
	s := &Server{audit: w, stderr: o.Stderr, requestTimeout: o.RequestTimeout, stages: o.Stages}
	if s.requestTimeout == 0 {
		s.requestTimeout = time.Duration(cfg.Sockets.RequestTimeoutMs) * time.Millisecond
	}
	if lines := rep.Lines(); len(lines) > 0 {
		s.log(lines...)
	}
	if secretsMissing {
		s.log("brokerd: the secrets directory "+wire.Printable(secretsDir)+" does not exist; a call under a grant that names a secret is denied (secret_unavailable)",
			runbook.See("secret-unavailable"))
	}
	if o.Runtime == nil && o.OpenRuntime != nil {
		if o.Runtime, err = o.OpenRuntime(); err != nil {
			return nil, errors.Join(err, w.Close())
		}
	}
	states := o.States
	if states == nil {
		st := state.New(filepath.Join(cfg.Paths.Home, "broker", "sessions"))
		if err := st.MakeDir(); err != nil {
			return nil, errors.Join(err, w.Close())
		}
		states = st
	}
	floor := o.Floor
	if floor == nil {
		f, err := openFloor(cfg.Paths.Home, states)
		if err != nil {
			return nil, errors.Join(err, w.Close())
		}
		if err := f.Err(); err != nil {
			s.log("brokerd: the taint floor cannot be read; every tool call is denied until it is fixed: "+err.Error(),
				runbook.See("broker-floor-damaged"))
		}
		floor = f
	}
	// No grant may reach boxmaker's own files (policy's loading rule 9):
	// what the config names, and what the runtime keeps (Podman's storage).
	// The check_grants of admin.sock applies the same set.
	paths := append(cfg.Protected(), executable()...)
	if rp, ok := o.Runtime.(runtimePaths); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		more, err := rp.Protected(ctx)
		cancel()
		if err != nil {
			return nil, errors.Join(err, w.Close())
		}
		paths = append(paths, more...)
	}
	protected, err := policy.NewProtected(paths)
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	// The same set is the runtime's check at every mount, made on the
	// objects it holds open, so an alias the loader cannot see (a bind
	// mount, a symlink made later) is refused too.
	if rp, ok := o.Runtime.(runtimeProtect); ok {
		rp.Protect(pathStrings(paths))
	}
	// The runtime reads a secret's value from the same directory, with
	// the same rules, at run time.
	if rs, ok := o.Runtime.(runtimeSecrets); ok {
		rs.SetSecrets(func(name string) ([]byte, error) { return policy.ReadSecret(secretsDir, name) })
	}
	grants := policy.NewGrantsDir(cfg.Paths.Grants, protected)
	// Every decision under a grant that names a secret reads the secret's
	// file first, so a call that could not run is denied, not run or asked.
	grants.SetSecretCheck(func(use policy.SecretUse) error { return policy.CheckSecretUse(secretsDir, use) })
	table := approvals.New()
	notesStore, err := openNotes(cfg.Paths.Home, s.log)
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	jobRunner := &jobrun.Runner{Audit: w, Bindings: state.NewBindings(filepath.Join(cfg.Paths.Home, "broker", "job-sessions")),
		States: states, Floor: floor, Notes: notesStore, LoopSocket: cfg.Sockets.Loop, Now: now, Log: s.log}
	s.broker = &broker.Broker{Grants: grants, Audit: w, States: states, Floor: floor, Approvals: table,
		Runtime: runner.WithMemory{Tools: o.Runtime, Notes: notesStore, Now: now}, Scopes: jobRunner,
		TTL: time.Duration(cfg.Approvals.TTLMs) * time.Millisecond, Now: now, Log: s.log}
	s.admin = &admin.Admin{Grants: grants, Approvals: table, Now: now, Notes: notesStore, Audit: w}

	// Each socket is 0600 in a directory of its own, 0660 in a deployed
	// pair directory, and lets through only the client [peers] names.
	for _, l := range []struct {
		sock socket
		path string
		peer *unixsock.Rule
	}{{brokerSock, cfg.Sockets.Broker, cfg.Peers.Broker}, {adminSock, cfg.Sockets.Admin, cfg.Peers.Admin}} {
		ln, err := unixsock.Listen(l.path, l.peer, func(line string) { s.log("brokerd: " + line) })
		if err != nil {
			err = fmt.Errorf("%s: %w; %s", l.sock.name, err, runbook.See("socket-unavailable"))
			for _, ln := range s.lns {
				ln.Close()
			}
			return nil, errors.Join(err, w.Close())
		}
		s.lns = append(s.lns, ln)
	}
	// gatewayd is told brokerd started once its sockets are up; nothing
	// waits for it.
	if cfg.Sockets.Gateway != "" {
		s.gateway = gateway.Start(gateway.Options{Socket: cfg.Sockets.Gateway, Approvals: table, Head: auditHead(w), Log: s.log, Now: now,
			HeadEvery: o.Gateway.HeadEvery, RetryMin: o.Gateway.RetryMin, RetryMax: o.Gateway.RetryMax, EndGrace: o.Gateway.EndGrace})
		s.broker.Gateway = s.gateway
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if s.gateway != nil {
		jobRunner.Poster = s.gateway
	}
	clock := o.JobsClock
	if clock == nil {
		clock = jobs.RealClock{}
	}
	js, err := s.startJobs(ctx, cfg, jobRunner, clock)
	if err != nil {
		cancel()
		for _, ln := range s.lns {
			ln.Close()
		}
		return nil, errors.Join(err, w.Close())
	}
	s.admin.Jobs = js
	hc := &health{runtime: o.Runtime, grants: grants, jobs: js.List, secretsDir: secretsDir, floor: floor, gateway: s.gateway, head: auditHead(w)}
	s.admin.Health = hc.report
	s.slots = []*slots{newSlots(brokerSock, cfg.Sockets.MaxBrokerConnections), newSlots(adminSock, cfg.Sockets.MaxAdminConnections)}
	for i, sock := range []socket{brokerSock, adminSock} {
		ln, sl := s.lns[i], s.slots[i]
		s.wg.Go(func() { s.accept(ctx, ln, sock, sl) })
	}
	every := o.SweepEvery
	if every == 0 {
		every = time.Second
	}
	s.wg.Go(func() { sweep(ctx, table, every, now) })
	s.log(fmt.Sprintf("brokerd: serving %s and %s; grants from %s", cfg.Sockets.Broker, cfg.Sockets.Admin, cfg.Paths.Grants))
	if s.gateway != nil {
		s.log(fmt.Sprintf("brokerd: approvals also go to gatewayd on %s (instance %s)", cfg.Sockets.Gateway, s.gateway.Broker()))
	}
	return s, nil
}

// auditHead is the head gatewayd is sent: the log's last synced record.
func auditHead(w *audit.Writer) func() (wire.AuditHead, bool) {
	return func() (wire.AuditHead, bool) {
		h := w.Head()
		if h.Next == 0 {
			return wire.AuditHead{}, false
		}
		return wire.AuditHead{Seq: h.Next - 1, Hash: h.Hash}, true
	}
}

// ranBefore names what in <home>/broker/ shows that brokerd ran here and
// returned a result before: its taint floor or a session's state file. The
// audit log's startup check then takes a missing head over an empty log
// as a deletion, not a first start.
func ranBefore(home string) string {
	broker := filepath.Join(home, "broker")
	if _, err := os.Lstat(filepath.Join(broker, "floor.json")); err == nil {
		return filepath.Join(broker, "floor.json") + " exists"
	}
	if names, err := os.ReadDir(filepath.Join(broker, "sessions")); err == nil && len(names) > 0 {
		return filepath.Join(broker, "sessions") + " holds session state"
	}
	return ""
}

// executable is the running boxmaker and the folder of its role links: a
// tool that could replace it would be the next brokerd, loopd or bxctl.
// What cannot be found is left out (the config's paths still hold).
func executable() []policy.ProtectedPath {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return []policy.ProtectedPath{{Path: exe, What: "boxmaker's executable"},
		{Path: filepath.Dir(exe), What: "the folder of boxmaker's executable"}}
}

// runtimeProtect is a runtime that refuses, at every mount, the paths no
// grant may reach (podman.Runtime.Protect).
type runtimeProtect interface{ Protect(paths []string) }

// runtimeSecrets is a runtime that reads grants' secrets by name
// (podman.Runtime.SetSecrets).
type runtimeSecrets interface {
	SetSecrets(read func(name string) ([]byte, error))
}

func pathStrings(ps []policy.ProtectedPath) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path
	}
	return out
}

// runtimePaths is a runtime that keeps files of its own no grant may reach.
type runtimePaths interface {
	Protected(ctx context.Context) ([]policy.ProtectedPath, error)
}

// openFloor reads the taint floor in <home>/broker/, creating the directory
// if need be. A floor with no file yet starts at the highest taint of the
// session files, when states can say it: a home from before the
// floor, whose loopd may hold a secret session, keeps it.
func openFloor(home string, states broker.States) (*state.Floor, error) {
	dir := filepath.Join(home, "broker")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	f := state.OpenFloor(filepath.Join(dir, "floor.json"))
	if st, ok := states.(interface {
		Highest() (wire.DataClass, error)
	}); ok && f.Missing() {
		high, err := st.Highest()
		if err != nil {
			return nil, err
		}
		if _, err := f.Raise(high); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Stop closes both sockets and every connection, waits for every goroutine
// (a call that is running finishes and records its result first), then
// stops the gateway client (which tells gatewayd of the approvals abandoned
// just now, within its grace) and closes the audit log.
func (s *Server) Stop() error {
	s.cancel()
	s.wg.Wait()
	if s.gateway != nil {
		s.gateway.Close()
	}
	return s.audit.Close()
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	s, err := Start(o)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// defaultSockets fills in caps and a timeout a Config not made by
// config.Parse leaves at zero.
func defaultSockets(c *config.Sockets) {
	var d config.Sockets
	d.SetDefaults()
	if c.MaxBrokerConnections == 0 {
		c.MaxBrokerConnections = d.MaxBrokerConnections
	}
	if c.MaxAdminConnections == 0 {
		c.MaxAdminConnections = d.MaxAdminConnections
	}
	if c.RequestTimeoutMs == 0 {
		c.RequestTimeoutMs = d.RequestTimeoutMs
	}
}

// accept serves ln until ctx ends, each connection on its own goroutine:
// an idle handler's, or a new one. A connection over the socket's cap is
// answered with an error frame and closed at once.
func (s *Server) accept(ctx context.Context, ln *unixsock.Listener, sock socket, sl *slots) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	// Handlers waiting for their next connection.
	idle := make(chan net.Conn)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// Out of file descriptors, say: wait and try again rather than
			// stop serving.
			s.log(fmt.Sprintf("brokerd: %s: %v", sock.name, err))
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		if !sl.take() {
			if notice := sl.refuse(conn, sock, time.Now()); notice != "" {
				s.log(notice)
			}
			continue
		}
		select {
		case idle <- conn:
		default:
			s.wg.Go(func() { s.work(ctx, conn, sock, sl, idle) })
		}
	}
}

// workerIdle is how long a connection's goroutine waits for the next one
// before it ends.
const workerIdle = 10 * time.Second

// work serves conn, then each connection handed to it on idle, until none
// comes for workerIdle or ctx ends. Reusing the goroutine keeps the stack it
// grew while decoding and deciding; a fresh goroutine per connection grew
// it again (by copying) for every request, a tenth of a denied call's time.
func (s *Server) work(ctx context.Context, conn net.Conn, sock socket, sl *slots, idle chan net.Conn) {
	wait := time.NewTimer(workerIdle)
	defer wait.Stop()
	for {
		s.handle(ctx, conn, sock)
		sl.give()
		wait.Reset(workerIdle)
		select {
		case conn = <-idle:
		case <-wait.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// sweep ends expired approvals every tick until ctx ends.
func sweep(ctx context.Context, t *approvals.Table, every time.Duration, now func() time.Time) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.Expire(now())
		case <-ctx.Done():
			return
		}
	}
}

// log writes lines to stderr together, so that lines from concurrent calls
// do not interleave.
func (s *Server) log(lines ...string) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = io.WriteString(s.stderr, strings.Join(lines, "\n")+"\n")
}
