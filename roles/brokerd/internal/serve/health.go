package serve

import (
	"context"
	"fmt"
	"strings"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/admin"
	"boxmaker/roles/brokerd/internal/broker"
	"boxmaker/roles/brokerd/internal/gateway"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// RuntimeDescriber is a runtime that can say what it checked at start
// (the Podman runner: its image and the probes it passed).
type RuntimeDescriber interface {
	Describe() string
}

// health is what brokerd answers bxctl doctor's health request with: each
// check it can make from inside, with what it found now. Nothing here
// changes state; each check reads what a call would read.
type health struct {
	runtime    runner.Runtime
	grants     *policy.GrantsDir
	jobs       func() wire.JobList
	secretsDir string
	floor      broker.Floor
	gateway    *gateway.Client // nil without [sockets] gateway
	head       func() (wire.AuditHead, bool)
}

func (h *health) report(context.Context) wire.HealthReport {
	var out wire.HealthReport
	add := func(name string, ok bool, detail, see string) {
		if ok {
			see = ""
		} else {
			// An error of brokerd's own may end with its runbook line
			// already; it is said once, in Runbook.
			detail = strings.TrimSuffix(strings.TrimSuffix(detail, see), "; ")
		}
		out.Checks = append(out.Checks, wire.HealthCheck{Name: name, OK: ok, Detail: detail, Runbook: see})
	}
	add(h.runtimeCheck())
	problems := admin.CheckGrants(h.grants)
	add("grants", len(problems) == 0, countProblems(problems, "the grant files load"), runbook.See("grants-invalid"))
	jobProblems := h.jobs().Problems
	add("jobs", len(jobProblems) == 0, countProblems(jobProblems, "the job files load"), runbook.See("jobs-invalid"))
	if missing, err := policy.CheckSecretsDir(h.secretsDir); err != nil {
		add("secrets", false, err.Error(), runbook.See("secrets-dir-unsafe"))
	} else if missing {
		add("secrets", true, fmt.Sprintf("%s does not exist: a grant naming a secret is denied", h.secretsDir), "")
	} else {
		add("secrets", true, fmt.Sprintf("%s is brokerd's alone", h.secretsDir), "")
	}
	if level, err := h.floor.Level(); err != nil {
		add("taint floor", false, "the floor cannot be read, so every call is denied: "+err.Error(), runbook.See("broker-floor-damaged"))
	} else {
		add("taint floor", true, fmt.Sprintf("level %s", level), "")
	}
	if h.gateway != nil {
		add(gatewayCheck(h.gateway))
	}
	if head, ok := h.head(); ok {
		out.Head = &head
	}
	return out
}

func (h *health) runtimeCheck() (string, bool, string, string) {
	if d, ok := h.runtime.(RuntimeDescriber); ok {
		return "tool runtime", true, d.Describe(), ""
	}
	return "tool runtime", false, "no [podman] image in brokerd.toml: every allowed call fails", runbook.See("tool-image-missing")
}

func gatewayCheck(c *gateway.Client) (string, bool, string, string) {
	started, down, head := c.Status()
	switch {
	case down:
		return "gatewayd", false, "the last try to reach it failed: approvals are not posted on Mattermost", runbook.See("gatewayd-unreachable")
	case !started:
		return "gatewayd", false, "it has not yet taken brokerd's start", runbook.See("gatewayd-unreachable")
	case head != nil:
		return "gatewayd", true, fmt.Sprintf("reached, and it holds audit head %d (it opens its socket only once signed in to Mattermost with every owner's channel open)", head.Seq), ""
	}
	return "gatewayd", true, "reached (it opens its socket only once signed in to Mattermost with every owner's channel open)", ""
}

func countProblems(problems []wire.GrantProblem, ok string) string {
	if len(problems) == 0 {
		return ok + " with no problem"
	}
	lines := make([]string, 0, len(problems))
	for _, p := range problems {
		lines = append(lines, policy.FormatProblem(p))
	}
	noun := "problems"
	if len(problems) == 1 {
		noun = "problem"
	}
	return fmt.Sprintf("%d %s: %s", len(problems), noun, strings.Join(lines, "; "))
}
