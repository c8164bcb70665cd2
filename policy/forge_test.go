package policy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The compile-time half of "Unforgeable decisions" (docs/design.md): code
// outside policy cannot write a usable Decision or Allowed. Each snippet is
// built as its own package in a throwaway module that imports this one, and
// the compiler's own message is checked, so the test fails if a field is
// ever exported or the snippet fails for another reason.

const forgeControl = `package main

import "boxmaker/policy"

func main() {
	var d policy.Decision // the zero value compiles, and denies
	_, _ = d.Claim()
	var a policy.Allowed
	_ = a.Tool()
}
`

var forgeries = []struct{ name, body, want string }{
	{"decision literal", `_ = policy.Decision{d: nil}`, "cannot refer to unexported field d in struct literal of type policy.Decision"},
	{"positional decision literal", `_ = policy.Decision{nil}`, "implicit assignment to unexported field d in struct literal of type policy.Decision"},
	{"inner type", `var p *policy.decision; _ = p`, "name decision not exported by package policy"},
	{"allowed literal", `_ = policy.Allowed{grantID: "g", paths: []string{"/"}}`, "cannot refer to unexported field grantID in struct literal of type policy.Allowed"},
	{"conversion", `type fake struct{ d *struct{} }; _ = policy.Decision(fake{})`, "cannot convert fake{}"},
	{"field write", `var d policy.Decision; d.d = nil; _ = d`, "d.d undefined (cannot refer to unexported field d)"},
}

func TestDecisionCannotBeForged(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed to type-check the snippets:", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module forge\n\ngo 1.26\n\nrequire boxmaker v0.0.0\n\nreplace boxmaker => "+root+"\n")
	write("go.sum", string(sum))
	build := func(dir string) (string, error) {
		cmd := exec.Command(goBin, "build", "-o", os.DevNull, "./"+dir)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	write("control/main.go", forgeControl)
	if out, err := build("control"); err != nil {
		t.Fatalf("the control snippet must compile (the test is broken, not policy): %v\n%s", err, out)
	}
	for i, f := range forgeries {
		dir := "forge" + string(rune('a'+i))
		write(dir+"/main.go", "package main\n\nimport \"boxmaker/policy\"\n\nfunc main() {\n\t"+f.body+"\n}\n")
		out, err := build(dir)
		if err == nil {
			t.Errorf("%s: compiled", f.name)
			continue
		}
		if !strings.Contains(out, f.want) {
			t.Errorf("%s: want %q in the compiler's output:\n%s", f.name, f.want, out)
		}
	}
}
