package main

import (
	"maps"
	"testing"
)

// plantedModule is a module named boxmaker with the card's layout, a fake
// Podman module and a third-party helper, all replaced by directories so
// that go list runs offline.
func plantedModule(extra map[string]string) map[string]string {
	files := map[string]string{
		"go.mod": `module boxmaker

go 1.26

require (
	github.com/containers/podman/v5 v5.0.0
	example.com/helper v1.0.0
)

replace (
	github.com/containers/podman/v5 => ./third/podman
	example.com/helper => ./third/helper
)
`,
		"third/podman/go.mod":                   "module github.com/containers/podman/v5\n\ngo 1.26\n",
		"third/podman/pkg/bindings/bindings.go": "package bindings\n",
		"third/helper/go.mod":                   "module example.com/helper\n\ngo 1.26\n",
		"third/helper/plain/plain.go":           "package plain\n",
		"third/helper/dial/dial.go":             "package dial\n\nimport _ \"net\"\n",
		"third/helper/pod/pod.go":               "package pod\n\nimport _ \"github.com/containers/podman/v5/pkg/bindings\"\n",
		"wire/wire.go":                          "package wire\n\nimport _ \"fmt\"\nimport _ \"example.com/helper/plain\"\n",
		"wire/sub/sub.go":                       "package sub\n\nimport _ \"boxmaker/wire\"\n",
		"policy/policy.go":                      "package policy\n\nimport _ \"boxmaker/wire\"\n",
		"audit/audit.go":                        "package audit\n\nimport _ \"boxmaker/wire\"\n",
		"runbook/runbook.go":                    "package runbook\n",
		"roles/brokerd/brokerd.go":              "package brokerd\n\nimport (\n\t_ \"boxmaker/audit\"\n\t_ \"boxmaker/policy\"\n\t_ \"boxmaker/roles/brokerd/internal/runner\"\n\t_ \"boxmaker/runbook\"\n)\n",
		"roles/brokerd/internal/runner/r.go":    "package runner\n\nimport _ \"github.com/containers/podman/v5/pkg/bindings\"\n",
		"roles/bxctl/bxctl.go":                  "package bxctl\n\nimport (\n\t_ \"boxmaker/audit\"\n\t_ \"boxmaker/policy\"\n)\n",
		"roles/loopd/loopd.go":                  "package loopd\n\nimport (\n\t_ \"boxmaker/runbook\"\n\t_ \"boxmaker/wire\"\n\t_ \"net\"\n)\n",
		"roles/gatewayd/gatewayd.go":            "package gatewayd\n",
		"roles/inferproxy/inferproxy.go":        "package inferproxy\n",
		"main.go":                               "package main\n\nimport (\n\t_ \"boxmaker/roles/brokerd\"\n\t_ \"boxmaker/roles/loopd\"\n)\n\nfunc main() {}\n",
		"internal/gate/gate.go":                 "package gate\n\nimport _ \"boxmaker/roles/brokerd\"\n",
	}
	maps.Copy(files, extra)
	return files
}

func TestImportsPassesTheCardsLayout(t *testing.T) {
	offline(t)
	problems, err := checkImports(writeTree(t, plantedModule(nil)))
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems)
}

func TestImportsFindsPlantedViolations(t *testing.T) {
	offline(t)
	dir := writeTree(t, plantedModule(map[string]string{
		"wire/exec.go":                   "package wire\n\nimport _ \"os/exec\"\n",
		"wire/sub/net.go":                "package sub\n\nimport _ \"example.com/helper/dial\"\n",
		"wire/ours.go":                   "package wire\n\nimport _ \"boxmaker/runbook\"\n",
		"policy/audit.go":                "package policy\n\nimport _ \"boxmaker/audit\"\n",
		"roles/loopd/broker.go":          "package loopd\n\nimport _ \"boxmaker/roles/brokerd\"\n",
		"roles/gatewayd/internal/x/x.go": "package x\n\nimport _ \"boxmaker/policy\"\n",
		"roles/gatewayd/gatewayd.go":     "package gatewayd\n\nimport _ \"boxmaker/roles/gatewayd/internal/x\"\n",
		"roles/bxctl/pod.go":             "package bxctl\n\nimport _ \"github.com/containers/podman/v5/pkg/bindings\"\n",
		"roles/inferproxy/pod.go":        "package inferproxy\n\nimport _ \"example.com/helper/pod\"\n",
		"newthing/newthing.go":           "package newthing\n",
	}))
	problems, err := checkImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems,
		"boxmaker/wire depends on os/exec, through boxmaker/wire -> os/exec: wire runs nothing",
		"boxmaker/wire/sub depends on net, through boxmaker/wire/sub -> example.com/helper/dial -> net",
		"boxmaker/wire imports boxmaker/runbook: wire may import nothing of ours",
		"boxmaker/policy imports boxmaker/audit: policy may import only wire",
		"boxmaker/roles/loopd imports boxmaker/roles/brokerd: roles/loopd may import only wire, runbook, cmdline, unixsock",
		"boxmaker/roles/gatewayd/internal/x imports boxmaker/policy: roles/gatewayd may import only wire, runbook, cmdline, unixsock",
		"boxmaker/roles/bxctl imports github.com/containers/podman/v5/pkg/bindings: only roles/brokerd may",
		"boxmaker/roles/inferproxy depends on github.com/containers/podman/v5/pkg/bindings, through boxmaker/roles/inferproxy -> example.com/helper/pod -> github.com/containers/podman/v5/pkg/bindings: only roles/brokerd may",
		`boxmaker/newthing: no import rule for unit "newthing"`,
	)
}

func TestImportsReportsPackagesThatDoNotLoad(t *testing.T) {
	offline(t)
	dir := writeTree(t, plantedModule(map[string]string{
		"policy/missing.go": "package policy\n\nimport _ \"boxmaker/nowhere\"\n",
	}))
	problems, err := checkImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems, "boxmaker/nowhere: package boxmaker/nowhere is not in std", `boxmaker/policy imports boxmaker/nowhere`)
}

func TestUnitOf(t *testing.T) {
	for path, want := range map[string]string{
		"boxmaker":                           ".",
		"boxmaker/wire":                      "wire",
		"boxmaker/wire/internal/x":           "wire",
		"boxmaker/roles/brokerd":             "roles/brokerd",
		"boxmaker/roles/brokerd/internal/rn": "roles/brokerd",
		"boxmaker/internal/gate":             "internal/gate",
		"boxmaker/roles":                     "roles",
	} {
		if got, ours := unitOf("boxmaker", path); !ours || got != want {
			t.Errorf("unitOf(%q) = %q, %v; want %q", path, got, ours, want)
		}
	}
	if _, ours := unitOf("boxmaker", "boxmakerx/wire"); ours {
		t.Error("boxmakerx/wire counted as ours")
	}
}
