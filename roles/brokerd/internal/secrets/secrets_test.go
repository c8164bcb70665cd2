package secrets_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/secrets"
	"boxmaker/runbook"
)

const value = "tok-3f9a8c1d-VALUE"

func dir(t *testing.T, mode os.FileMode, files map[string]os.FileMode) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "secrets")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, m := range files {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(d, 0o700) })
	return d
}

// noValue fails the test if s shows the secret's value.
func noValue(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, value) {
		t.Errorf("%s shows the value: %q", what, s)
	}
}

func TestStore(t *testing.T) {
	d := dir(t, 0o700, map[string]os.FileMode{"api-key": 0o600, "open": 0o644})
	s, err := secrets.Open(d)
	if err != nil || s.Missing() || s.Dir() != d {
		t.Fatalf("Open: %v, missing %v", err, s.Missing())
	}
	v, err := s.Read("api-key")
	if err != nil || string(v) != value {
		t.Errorf("Read = %q, %v", v, err)
	}
	if err := s.Check("api-key"); err != nil {
		t.Errorf("Check: %v", err)
	}
	for name, see := range map[string]string{"open": runbook.See("secret-file-unsafe"), "absent": runbook.See("secret-unavailable"),
		"../api-key": runbook.See("secret-unavailable")} {
		err := s.Check(name)
		if err == nil || !strings.HasSuffix(err.Error(), "\n"+see) || !strings.Contains(err.Error(), fmt.Sprintf("secret %q", name)) {
			t.Errorf("Check(%q) = %v; want it named and %s", name, err, see)
			continue
		}
		noValue(t, name, err.Error())
		if _, rerr := s.Read(name); rerr == nil || rerr.Error() != err.Error() {
			t.Errorf("Read(%q) = %v, Check %v", name, rerr, err)
		}
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		noValue(t, f, fmt.Sprintf(f, s))
	}
	if !secrets.ValidName("api-key") || secrets.ValidName("API") || secrets.ValidName("a/b") {
		t.Error("ValidName")
	}
}

// TestOpenRefusesUnsafeDirectories: a directory group or others may read,
// write or search, or a symbolic link to a good one, refuses to open, with
// the runbook line; a missing one opens, and every secret is unavailable.
func TestOpenRefusesUnsafeDirectories(t *testing.T) {
	for _, mode := range []os.FileMode{0o755, 0o750, 0o705, 0o701, 0o710, 0o702, 0o720, 0o777} {
		d := dir(t, mode, map[string]os.FileMode{"k": 0o600})
		s, err := secrets.Open(d)
		want := fmt.Sprintf("the secrets directory %s has mode %04o", d, mode)
		if s != nil || err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "\n"+runbook.See("secrets-dir-unsafe")) {
			t.Errorf("mode %04o: %v, %v", mode, s, err)
		}
	}
	good := dir(t, 0o700, nil)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Open(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link") ||
		!strings.HasSuffix(err.Error(), runbook.See("secrets-dir-unsafe")) {
		t.Errorf("a link: %v", err)
	}
	absent := filepath.Join(t.TempDir(), "absent")
	s, err := secrets.Open(absent)
	if err != nil || !s.Missing() {
		t.Fatalf("a missing directory: %v", err)
	}
	if err := s.Check("k"); err == nil || !strings.Contains(err.Error(), "does not exist") ||
		!strings.HasSuffix(err.Error(), runbook.See("secret-unavailable")) {
		t.Errorf("Check in a missing directory: %v", err)
	}
	// Created later, with the secret in it: it is read from then on.
	if err := os.Mkdir(absent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(absent, "k"), []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Read("k"); err != nil || string(v) != value {
		t.Errorf("after the directory was made: %q, %v", v, err)
	}
	// Made unsafe after start: refused at the next read.
	if err := os.Chmod(absent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Check("k"); err == nil || !strings.HasSuffix(err.Error(), runbook.See("secrets-dir-unsafe")) {
		t.Errorf("after chmod 755: %v", err)
	}
}
