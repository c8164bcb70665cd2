// Package runner is the seam between a decision and a tool run (M3a §7): Run
// claims a policy.Decision, builds the RunSpec that says exactly what the
// tool may touch, and hands it to a Runtime. It is the only place a usable
// RunSpec is built.
package runner

import (
	"context"
	"errors"
	"slices"
	"strings"

	"boxmaker/policy"
	"boxmaker/wire"
)

// Mount is one host path given to the tool's container, at the same path.
type Mount struct {
	Path     string
	Writable bool
}

// RunSpec is everything one run may do. Its fields are unexported, so code
// outside this package can only write the zero RunSpec, which names no tool;
// every Runtime must refuse a spec whose Valid is false.
type RunSpec struct {
	tool   policy.Tool
	args   policy.Args
	mounts []Mount
	egress []string // the grant's host patterns; nil means no network at all
	// secret is the grant's secret, by name: the runtime reads the value
	// at run time (issue 15). nil: none.
	secret *policy.SecretUse
	// session and call are the request's, so that whatever the runtime
	// makes for the run (a container) can be labelled with them.
	session wire.SessionID
	call    wire.CallID
}

// Valid reports whether the spec was built by Run: only Run sets a tool.
func (s *RunSpec) Valid() bool { return s != nil && s.tool.Valid() && s.args != nil }

// Tool is the tool to run.
func (s *RunSpec) Tool() policy.Tool { return s.tool }

// Args are the typed arguments policy parsed and checked.
func (s *RunSpec) Args() policy.Args { return s.args }

// Mounts are the host paths the container gets; nothing else of the host.
func (s *RunSpec) Mounts() []Mount { return slices.Clone(s.mounts) }

// Egress is the host patterns http_fetch may reach; ok is false for every
// other tool, which gets no network at all.
func (s *RunSpec) Egress() (hosts []string, ok bool) {
	return slices.Clone(s.egress), s.egress != nil
}

// Secret is how the grant hands its secret to the tool; ok is false for a
// grant without one. It holds the secret's name, never its value.
func (s *RunSpec) Secret() (use policy.SecretUse, ok bool) {
	if s.secret == nil {
		return policy.SecretUse{}, false
	}
	use = *s.secret
	use.Hosts = slices.Clone(use.Hosts)
	return use, true
}

// Call is the session and call the run is for.
func (s *RunSpec) Call() (wire.SessionID, wire.CallID) { return s.session, s.call }

// Output is what a tool produced, already capped by the runtime.
type Output struct {
	Content   string
	Truncated bool
}

// Runtime runs one spec. It returns an *Error for a tool that failed or
// could not run. Run returns only once nothing the run started is still
// running (the Podman runtime: its container is removed, or its toolkit, the
// init of its PID namespace, is seen to exit): brokerd writes
// the session state after Run returns (M3a §5, "Write order"), and
// nothing of the call may race that write or outlive the call.
type Runtime interface {
	Run(ctx context.Context, spec *RunSpec) (Output, error)
}

// Error is a run that did not produce a result. Unavailable means the
// runtime itself could not run anything (no Podman, no image); otherwise the
// tool ran and failed. Both reach the model as failed with Message.
type Error struct {
	Unavailable bool
	Message     string
}

func (e *Error) Error() string { return e.Message }

// Failed and Unavailable build the two kinds of Error.
func Failed(msg string) error      { return &Error{Message: msg} }
func Unavailable(msg string) error { return &Error{Unavailable: true, Message: msg} }

// Refusing is the runtime until the Podman runner is configured: it runs
// nothing.
type Refusing struct{}

func (Refusing) Run(context.Context, *RunSpec) (Output, error) {
	return Output{}, Unavailable("the runner arrives in M3b")
}

// Result is what brokerd needs after a run: the answer for loopd, and what
// the grant says about the content, for the session state and the audit log.
type Result struct {
	Response  wire.ToolResponse // ResultResponse or FailedResponse
	Status    wire.ResultStatus
	Class     wire.DataClass // the grant's result_class
	Untrusted bool           // the grant's untrusted
	Grant     string
}

// ErrNotAllowed wraps the reason a decision could not be claimed.
var ErrNotAllowed = errors.New("runner: the decision does not allow a run")

// Run claims d (once: a second Run of the same decision, or of a copy,
// fails) and runs it on rt. Nothing reaches rt unless the claim succeeds.
func Run(ctx context.Context, d policy.Decision, rt Runtime) (Result, error) {
	req := d.Request()
	a, err := d.Claim()
	if err != nil {
		return Result{}, errors.Join(ErrNotAllowed, err)
	}
	res := Result{Class: a.ResultClass(), Untrusted: a.Untrusted(), Grant: a.GrantID()}
	if isMemory(a.Tool()) {
		return runMemory(rt, a, req, d.State(), res), nil
	}
	spec := specFor(a)
	spec.session, spec.call = req.Session, req.Call
	out, err := rt.Run(ctx, spec)
	if err != nil {
		var re *Error
		msg := "the tool failed: " + err.Error()
		if errors.As(err, &re) {
			msg = re.Message
		}
		res.Response, res.Status = wire.FailedResponse{Message: msg}, wire.StatusFailed
		return res, nil
	}
	res.Response = wire.ResultResponse{Content: out.Content, Class: res.Class, Untrusted: res.Untrusted, Truncated: out.Truncated}
	res.Status = wire.StatusResult
	return res, nil
}

// specFor is M3a §7's table: read_file gets the matched grant path
// read-only, write_file the matched path writable, shell every path of the
// grant writable (read-only when the grant hands it a secret), http_fetch
// no mount and the grant's hosts as egress.
func specFor(a policy.Allowed) *RunSpec {
	s := &RunSpec{tool: a.Tool(), args: a.Args()}
	if use, ok := a.Secret(); ok {
		s.secret = &use
	}
	// A shell that holds its grant's secret writes nothing of the host: a
	// file it wrote there would keep the value outside the secrets
	// directory, where no taint follows it (another session's read_file
	// is classed by its own grant, and may run before this call's result
	// raises the floor). Its output, which is class secret, is its only way
	// out.
	// (policy.MountWritable, which `bxctl grants check --fix` shares.)
	writable := policy.MountWritable(a.Tool(), s.secret != nil)
	switch a.Tool() {
	case policy.ReadFile, policy.WriteFile, policy.Shell:
		for _, p := range a.Paths() {
			s.mounts = append(s.mounts, Mount{Path: p, Writable: writable})
		}
		s.mounts = outermost(s.mounts)
	case policy.HTTPFetch:
		s.egress = a.Hosts()
		if s.egress == nil {
			s.egress = []string{}
		}
	}
	return s
}

// outermost drops every mount that is, or lies inside, another mount of the
// same call. All mounts of one call have the same mode, so the outer one
// already gives the inner path, and nothing is lost. It must be dropped:
// the container runtime resolves a nested mount's destination through the
// outer mount, a live bind of a host folder the tool can write, so another
// call's command swapping a folder there for a symlink between brokerd's
// check and the mount could place the inner mount's source anywhere on the
// host (issue 12, item 1). Paths are clean and absolute (policy checks
// them), so comparing them as strings is exact.
func outermost(ms []Mount) []Mount {
	var out []Mount
	for i, m := range ms {
		inside := false
		for j, o := range ms {
			if i == j {
				continue
			}
			// Of two equal paths, the first is kept.
			if (o.Path == m.Path && j < i) || strings.HasPrefix(m.Path, strings.TrimSuffix(o.Path, "/")+"/") {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, m)
		}
	}
	return out
}
