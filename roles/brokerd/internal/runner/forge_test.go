package runner_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The compile-time half of an unforgeable RunSpec: code outside runner can
// write only the zero RunSpec. The snippets must live inside roles/brokerd to
// be allowed to import this internal package, so each is built from a
// directory whose name starts with "_", which ./... patterns skip, and which
// is removed afterwards.
var forgeries = []struct{ name, body, want string }{
	{"literal", `_ = &runner.RunSpec{tool: 1}`, "cannot refer to unexported field tool in struct literal of type runner.RunSpec"},
	{"mounts", `var s runner.RunSpec; s.mounts = nil; _ = s`, "s.mounts undefined (type runner.RunSpec has no field or method mounts, but does have method Mounts)"},
	{"egress", `_ = runner.RunSpec{egress: []string{"*.com"}}`, "cannot refer to unexported field egress in struct literal of type runner.RunSpec"},
}

func TestRunSpecCannotBeForged(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed to type-check the snippets:", err)
	}
	base, err := os.MkdirTemp("../..", "_forge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	build := func(name, body string) (string, error) {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		src := "package main\n\nimport \"boxmaker/roles/brokerd/internal/runner\"\n\nfunc main() {\n\t" + body + "\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(goBin, "build", "-o", os.DevNull, "./"+filepath.Base(base)+"/"+name)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := build("control", "var s runner.RunSpec\n\t_ = s.Valid()"); err != nil {
		t.Fatalf("the control snippet must compile (the test is broken, not runner): %v\n%s", err, out)
	}
	for i, f := range forgeries {
		out, err := build(string(rune('a'+i)), f.body)
		if err == nil {
			t.Errorf("%s: compiled", f.name)
			continue
		}
		if !strings.Contains(out, f.want) {
			t.Errorf("%s: want %q in the compiler's output:\n%s", f.name, f.want, out)
		}
	}
}
