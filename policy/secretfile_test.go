package policy_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/policy"
)

// marker is in every secret file these tests write: no error may show it.
const marker = "s3cr3t-VALUE"

// secretsDir is a fresh directory of mode 0700 holding files (name to
// content, mode 0600).
func secretsDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "secrets")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// secretErr requires err to be a *SecretError for name that points to
// see, mentions want, and shows no secret content.
func secretErr(t *testing.T, what string, err error, name, see, want string) {
	t.Helper()
	var se *policy.SecretError
	if !errors.As(err, &se) {
		t.Errorf("%s: error %v (%T), want a *SecretError", what, err, err)
		return
	}
	if se.Name != name || se.See != see || !strings.Contains(err.Error(), want) ||
		!strings.HasSuffix(err.Error(), "\n"+see) || strings.Contains(err.Error(), marker) {
		t.Errorf("%s: %q; want secret %q, %q, and %q at the end", what, err, name, want, see)
	}
}

func TestReadSecretValue(t *testing.T) {
	big := strings.Repeat("x", policy.MaxSecretBytes)
	dir := secretsDir(t, map[string]string{
		"plain": marker, "newline": marker + "\n", "two": marker + "\n\n", "crlf": marker + "\r\n",
		"binary": "\x00\xff\n\x01", "full": big, "full-nl": big + "\n",
	})
	for name, want := range map[string]string{
		"plain": marker, "newline": marker, "two": marker + "\n", "crlf": marker + "\r",
		"binary": "\x00\xff\n\x01", "full": big,
	} {
		v, err := policy.ReadSecret(dir, name)
		if err != nil || string(v) != want {
			t.Errorf("%s: %d bytes, %v; want %d bytes", name, len(v), err, len(want))
		}
		if err := policy.CheckSecretUse(dir, policy.SecretUse{Name: name, File: true}); err != nil {
			t.Errorf("CheckSecretUse(%s): %v", name, err)
		}
	}
	// One byte over the bound, even if that byte is the newline dropped.
	_, err := policy.ReadSecret(dir, "full-nl")
	secretErr(t, "full-nl", err, "full-nl", policy.RunbookSecretFileUnsafe, "is larger than 65536 bytes")
}

// TestReadSecretRefuses: every file brokerd must not use, and why.
func TestReadSecretRefuses(t *testing.T) {
	dir := secretsDir(t, map[string]string{"good": marker, "empty": "", "newline-only": "\n",
		"big": strings.Repeat(marker, policy.MaxSecretBytes/len(marker)+1)})
	mode := func(name string, m os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(marker), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, name), m); err != nil {
			t.Fatal(err)
		}
	}
	mode("world", 0o644)
	mode("group", 0o640)
	mode("other-write", 0o602)
	mode("group-exec", 0o610)
	if err := os.Symlink("good", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := func(n string) string { return filepath.Join(dir, n) }
	for _, tc := range []struct{ name, see, want string }{
		{"missing", policy.RunbookSecretUnavailable, "there is no file " + path("missing")},
		{"empty", policy.RunbookSecretUnavailable, path("empty") + " is empty"},
		{"newline-only", policy.RunbookSecretUnavailable, path("newline-only") + " is empty"},
		{"world", policy.RunbookSecretFileUnsafe, path("world") + " has mode 0644: group and others must have no access (chmod 600)"},
		{"group", policy.RunbookSecretFileUnsafe, "has mode 0640"},
		{"other-write", policy.RunbookSecretFileUnsafe, "has mode 0602"},
		{"group-exec", policy.RunbookSecretFileUnsafe, "has mode 0610"},
		{"link", policy.RunbookSecretFileUnsafe, path("link") + " is a symbolic link"},
		{"fifo", policy.RunbookSecretFileUnsafe, path("fifo") + " is not a regular file"},
		{"subdir", policy.RunbookSecretFileUnsafe, "is not a regular file"},
		{"big", policy.RunbookSecretFileUnsafe, "is larger than 65536 bytes"},
		{"Bad", policy.RunbookSecretUnavailable, "is not a valid secret name"},
		{"..", policy.RunbookSecretUnavailable, "is not a valid secret name"},
		{"../secrets/good", policy.RunbookSecretUnavailable, "is not a valid secret name"},
	} {
		v, err := policy.ReadSecret(dir, tc.name)
		if v != nil {
			t.Errorf("%s: a value of %d bytes with %v", tc.name, len(v), err)
		}
		secretErr(t, tc.name, err, tc.name, tc.see, tc.want)
		if cerr := policy.CheckSecretUse(dir, policy.SecretUse{Name: tc.name, File: true}); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("%s: CheckSecret %v, ReadSecret %v", tc.name, cerr, err)
		}
	}
	// Another user's file, mode 0600. Only root can give a file away, and
	// the machines the gate runs on test as root; as any other user the
	// pretence below covers the same comparison for the directory.
	if os.Geteuid() == 0 {
		mode("theirs", 0o600)
		if err := os.Chown(path("theirs"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := policy.ReadSecret(dir, "theirs")
		secretErr(t, "chowned", err, "theirs", policy.RunbookSecretFileUnsafe, path("theirs")+" is owned by uid 65534, not by uid 0, the user reading it")
	}
	// Seen as another user, the directory is refused before any file.
	policy.PretendEUID(t, os.Geteuid()+1)
	_, err := policy.ReadSecret(dir, "good")
	secretErr(t, "another user", err, "good", policy.RunbookSecretsDirUnsafe, "the secrets directory "+dir+" is owned by uid")
}

// TestSecretsDir: the directory's own rules, at start (CheckSecretsDir)
// and at every read.
func TestSecretsDir(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, m os.FileMode) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "k"), []byte(marker), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, m); err != nil {
			t.Fatal(err)
		}
		return d
	}
	good, readOnly := mk("good", 0o700), mk("ro", 0o500)
	// Let TempDir remove it when the test does not run as root.
	t.Cleanup(func() { _ = os.Chmod(readOnly, 0o700) })
	for _, d := range []string{good, readOnly} {
		if missing, err := policy.CheckSecretsDir(d); missing || err != nil {
			t.Errorf("%s: missing %v, %v", d, missing, err)
		}
		if v, err := policy.ReadSecret(d, "k"); err != nil || string(v) != marker {
			t.Errorf("%s: %v", d, err)
		}
	}
	absent := filepath.Join(root, "absent")
	if missing, err := policy.CheckSecretsDir(absent); !missing || err != nil {
		t.Errorf("absent: missing %v, %v", missing, err)
	}
	_, err := policy.ReadSecret(absent, "k")
	secretErr(t, "absent", err, "k", policy.RunbookSecretUnavailable, "the secrets directory "+absent+" does not exist")

	link := filepath.Join(root, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{mk("world-readable", 0o755), "has mode 0755: group and others must have no access (chmod 700)"},
		{mk("group-readable", 0o740), "has mode 0740"},
		{mk("searchable", 0o701), "has mode 0701"},
		{mk("group-writable", 0o720), "has mode 0720"},
		{link, "is a symbolic link; give brokerd the directory itself"},
		{file, "is not a directory"},
	} {
		missing, err := policy.CheckSecretsDir(tc.dir)
		if missing {
			t.Errorf("%s: missing", tc.dir)
		}
		secretErr(t, tc.dir, err, "", policy.RunbookSecretsDirUnsafe, "the secrets directory "+tc.dir+" "+tc.want)
		_, err = policy.ReadSecret(tc.dir, "k")
		secretErr(t, tc.dir, err, "k", policy.RunbookSecretsDirUnsafe, "the secrets directory "+tc.dir+" "+tc.want)
	}
	if os.Geteuid() == 0 {
		theirs := mk("theirs", 0o700)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := policy.CheckSecretsDir(theirs)
		secretErr(t, "chowned", err, "", policy.RunbookSecretsDirUnsafe, "is owned by uid 65534, not by uid 0, the user reading it")
	}
	policy.PretendEUID(t, os.Geteuid()+1)
	_, err = policy.CheckSecretsDir(good)
	secretErr(t, "another user", err, "", policy.RunbookSecretsDirUnsafe, "the secrets directory "+good+" is owned by uid")
}

// TestCheckSecretUse: a value that goes in a header must be one a header
// can carry (no control character but tab, no DEL), so that the call is
// denied when it is decided, not refused by the proxy after an approval;
// the same value is fine as a file. Errors name the byte, never the value.
func TestCheckSecretUse(t *testing.T) {
	dir := secretsDir(t, map[string]string{"crlf": marker + "\r\n", "tab": marker + "\tx\n", "nul": marker + "\x00", "del": "\x7f" + marker, "pem": marker + "\nline two\n"})
	header := func(name string) policy.SecretUse {
		return policy.SecretUse{Name: name, Header: "Authorization", Format: "{}", Hosts: []string{"api.example.com"}}
	}
	for name, at := range map[string]int{"crlf": len(marker), "nul": len(marker), "del": 0, "pem": len(marker)} {
		err := policy.CheckSecretUse(dir, header(name))
		secretErr(t, name, err, name, policy.RunbookSecretFileUnsafe, fmt.Sprintf("goes in the header Authorization, but byte %d of its value is a control character", at))
		if err := policy.CheckSecretUse(dir, policy.SecretUse{Name: name, File: true}); err != nil {
			t.Errorf("%s as a file: %v", name, err)
		}
	}
	if err := policy.CheckSecretUse(dir, header("tab")); err != nil {
		t.Errorf("a tab in a header value: %v", err)
	}
	secretErr(t, "missing", policy.CheckSecretUse(dir, header("gone")), "gone", policy.RunbookSecretUnavailable, "")
	for _, c := range []struct {
		v    string
		want int
	}{{"abc", -1}, {"a\tb", -1}, {"a\x80b", -1}, {"a\rb", 1}, {"\nab", 0}, {"ab\x7f", 2}, {"ab\x1f", 2}} {
		if got := policy.BadHeaderByte([]byte(c.v)); got != c.want {
			t.Errorf("BadHeaderByte(%q) = %d, want %d", c.v, got, c.want)
		}
	}
}
