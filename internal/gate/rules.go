package main

// The design card's import rules, as data. DO NOT CHANGE THIS DATA TO FIX A
// BUILD: change it when the design card changes, and say why here.
//
// A unit is one top-level package of ours with everything under it
// ("wire", "policy"), one role with everything under it ("roles/brokerd"),
// one folder under internal/ ("internal/gate"), or "." for the root package
// (main.go). Packages of one unit may import each other. Every package of
// ours must belong to a unit with a rule: a new package needs a rule and a
// reason before the gate passes.
//
// Only production imports are checked (go list's Imports and Deps, not
// TestImports): an end-to-end test may join roles in one process (M3a §12),
// and tests are never linked into the binary.

// rule: the units of ours that unit may import directly. Because every unit
// is checked, this also bounds what it reaches transitively.
type rule struct {
	unit string
	may  []string
	why  string
}

var importRules = []rule{
	{"wire", nil,
		"wire holds the shared types and codec that every role links; it must bring nothing of ours with it"},
	{"policy", []string{"wire"},
		"grant loading and decisions work on wire's types only; no I/O beyond reading grant files and the secrets directory's files (issue 15: one checker for brokerd and bxctl), no roles"},
	{"audit", []string{"wire"},
		"the chain verifier and writer work on wire's records only; brokerd and bxctl both link it"},
	{"runbook", nil,
		"every role imports runbook for its pointers, so it must bring nothing of ours with it"},
	{"cmdline", nil,
		"the kong glue every role's command line shares (issue 13); it imports nothing of ours, so no role reaches another through it"},
	{"deploy", []string{"runbook", "cmdline"},
		"the deployment plan and deploy apply (issue 13): data about the roles, never their code, so it imports no role"},
	{"unixsock", []string{"runbook"},
		"every role listens on Unix sockets made and peer-checked the same way (issue 13); it holds no policy and no role's code, so sharing it lets no role reach another. The four roles that listen (brokerd, loopd, gatewayd, inferproxy) may import it; bxctl and the toolkit listen on nothing"},
	{"roles/brokerd", []string{"wire", "policy", "audit", "runbook", "cmdline", "unixsock"},
		"brokerd decides (policy), records (audit) and answers (wire)"},
	{"roles/bxctl", []string{"wire", "audit", "policy", "runbook", "cmdline"},
		"bxctl verifies the audit log offline with brokerd's verifier and checks grant files with brokerd's loader"},
	{"roles/loopd", []string{"wire", "runbook", "cmdline", "unixsock"},
		"loopd holds no policy: it must not be able to decide or approve a tool call, only ask brokerd"},
	{"roles/gatewayd", []string{"wire", "runbook", "cmdline", "unixsock"},
		"gatewayd relays the owner's messages and answers; it decides nothing"},
	{"roles/inferproxy", []string{"wire", "runbook", "cmdline", "unixsock"},
		"inferproxy forwards bytes to the model server; it decides nothing"},
	{"roles/toolkit", []string{"wire", "runbook"},
		"the tool program inside containers (a hidden role of the binary): it decides nothing, so no policy, and talks to nothing but its stdin, stdout and the egress proxy"},
	{"internal/fakellama", nil,
		"the fake llama-server for offline tests (design card, M2); tests of any role may use it, no production package may (no rule lists it)"},
	{"internal/fakemm", nil,
		"the stand-in Mattermost server for gatewayd's tests (issue 14); tests of any role may use it, no production package may (no rule lists it)"},
	{"internal/tinymodel", nil,
		"writes tiny GGUF models for tests against the real llama-server (issue 16); tests and .ci/llama-setup use it, no production package may (no rule lists it)"},
	{"internal/syncbuf", nil,
		"a goroutine-safe buffer for what tests capture of running output; tests of any package may use it, no production package may (no rule lists it)"},
	{"internal/harness", []string{"deploy"},
		"the demo's and end-to-end tests' process runner: it runs the built binaries and links no role, so it cannot bypass a role's boundary; it reads a deployment's users and paths from the plan (issue 13)"},
	{".", []string{"roles/loopd", "roles/brokerd", "roles/gatewayd", "roles/inferproxy", "roles/bxctl", "roles/toolkit", "wire", "runbook", "deploy"},
		"main.go only chooses a role by argv[0] and calls its entry point"},
}

// exemptUnits are development tooling, never linked into the binary.
var exemptUnits = map[string]string{
	"internal/gate": "the gate itself: it runs the go command and reads files, and no role imports it",
}

// ban: a package (or, ending in "/...", a tree of packages) that no package
// of unit may depend on, directly or through any other package.
type ban struct {
	unit string
	dep  string
	why  string
}

var bans = []ban{
	{"wire", "net", "wire does no I/O except frames on a caller's stream; with net it could dial or listen"},
	{"wire", "os/exec", "wire runs nothing"},
	{"wire", "golang.org/x/sys/...", "wire makes no system calls of its own"},
	{"wire", "github.com/containers/...", "only brokerd talks to the container runtime"},
}

// exclusive: a tree of packages only some units may depend on. Direct units
// may import it; via units may only reach it through a direct unit.
type exclusive struct {
	dep    string
	direct []string
	via    []string
	why    string
}

var exclusives = []exclusive{
	{"github.com/containers/podman/...", []string{"roles/brokerd"}, []string{"."},
		"brokerd is the only role that talks to Podman; main.go links brokerd, so the binary carries the bindings, but nothing else may use them"},
}
