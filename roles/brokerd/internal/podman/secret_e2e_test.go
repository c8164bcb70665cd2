package podman_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"

	"boxmaker/roles/brokerd/internal/redact"
	"boxmaker/wire"
)

// Issue 15's file path end to end: brokerd serving broker.sock, a shell
// grant that hands its tool a secret as a file, and a model that tries to
// get the secret out.

// fileSecretGrant is a shell grant on dir whose tool gets the secret
// api-key as a file.
func fileSecretGrant(dir string) string {
	return fmt.Sprintf("tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"api-key\"\n"+
		"secret_deliver = \"file\"\n[constraints]\npaths = [%q]\n", dir)
}

// TestSecretFileLeakAttempts: a hostile model reads its file-delivered
// secret and prints it plainly, in base64, in hex, reversed and split
// across lines. The first three come back redacted; every one leaves its
// session at secret, and the session's next http_fetch, under a grant
// cleared only for private data, is denied taint_too_high. The value is
// in no file under brokerd's home, no log line, no answer.
func TestSecretFileLeakAttempts(t *testing.T) {
	b := startBrokerd(t)
	value := []byte(fmt.Sprintf("sk-file-%x", wire.Sha256([]byte(t.Name()+fmt.Sprint(os.Getpid())))))[:40]
	leaks := redact.New("api-key", value)
	if err := os.WriteFile(filepath.Join(b.secrets, "api-key"), append(value, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Chmod(work, 0o777); err != nil { // the tools run as 65534
		t.Fatal(err)
	}
	writeGrant(t, b, "shell-secret.toml", fileSecretGrant(work))
	writeGrant(t, b, "fetch.toml", "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\nhosts = [\"example.com\"]\n")

	rev := func(s []byte) string {
		r := []byte(string(s))
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}
	for i, tc := range []struct {
		command  string
		redacted bool
		// raw is what the output holds when nothing is redacted.
		raw string
	}{
		{`cat "$BOXMAKER_SECRET_FILE"`, true, string(value)},
		{`base64 "$BOXMAKER_SECRET_FILE"`, true, ""},
		{`xxd -p "$BOXMAKER_SECRET_FILE"`, true, ""},
		{`rev "$BOXMAKER_SECRET_FILE"`, false, rev(value)},
		{`fold -w 7 "$BOXMAKER_SECRET_FILE"`, false, string(value[:7]) + "\n" + string(value[7:14])},
	} {
		session, _ := wire.NewSessionID(fmt.Sprintf("leak-%d", i))
		msg := b.call(t, wire.ToolRequest{Session: session, Call: 1, Tool: "shell", Arguments: fmt.Sprintf(`{"command":%q,"cwd":%q}`, tc.command, work)})
		r, ok := msg.(wire.ResultResponse)
		if !ok || r.Class != wire.Secret {
			t.Fatalf("%s: %#v", tc.command, msg)
		}
		switch {
		case tc.redacted && (!strings.Contains(r.Content, "[secret:api-key]") || leaks.String(r.Content) != r.Content):
			t.Errorf("%s: not redacted: %q", tc.command, r.Content)
		case !tc.redacted && !strings.Contains(r.Content, tc.raw):
			// Redaction cannot know these forms: the taint rule below is
			// the defence. Were this to change, the test should say so.
			t.Errorf("%s: %q does not hold %q", tc.command, r.Content, tc.raw)
		}
		got := b.call(t, wire.ToolRequest{Session: session, Call: 2, Tool: "http_fetch", Arguments: `{"url":"https://example.com/?q=x"}`})
		if got != (wire.DeniedResponse{Reason: wire.TaintTooHigh}) {
			t.Errorf("%s: the next http_fetch got %#v, want taint_too_high", tc.command, got)
		}
	}

	// The file is the tool's, readable, mode 0400, on its own tmpfs; no
	// process's environment holds the value; and it is gone after the call.
	session, _ := wire.NewSessionID("look")
	// /proc/1 is the toolkit, which holds the request: it must be
	// unreadable, and every other process's environment readable and clean.
	look := `F="$BOXMAKER_SECRET_FILE"; echo "$F"; stat -c '%a %u' "$F"; grep -c . "$F"; ` +
		`cat /proc/1/environ >/dev/null 2>&1 || echo "pid 1 unreadable"; ` +
		`for e in /proc/[0-9]*/environ; do [ "$e" = /proc/1/environ ] && continue; if grep -qF -f "$F" "$e" 2>/dev/null; then echo "LEAK in $e"; else echo clean; fi; done | sort -u; ` +
		`grep -rlF -f "$F" /tmp /var/tmp /run 2>/dev/null; awk '$5=="/run/boxmaker/secret" {for (i = 7; i <= NF; i++) if ($i == "-") print $5, $(i+1)}' /proc/self/mountinfo`
	msg := b.call(t, wire.ToolRequest{Session: session, Call: 1, Tool: "shell", Arguments: fmt.Sprintf(`{"command":%q,"cwd":%q}`, look, work)})
	r, ok := msg.(wire.ResultResponse)
	want := "/run/boxmaker/secret/api-key\n400 65534\n1\npid 1 unreadable\nclean\n/run/boxmaker/secret/api-key\n/run/boxmaker/secret tmpfs\n"
	if !ok || r.Content != want {
		t.Errorf("inside the container: %#v, want %q", msg, want)
	}
	// The grant's folder is there to read, not to write: a copy of the
	// value left in it would outlive the call, with no taint on it.
	msg = b.call(t, wire.ToolRequest{Session: session, Call: 2, Tool: "shell",
		Arguments: fmt.Sprintf(`{"command":"cp \"$BOXMAKER_SECRET_FILE\" leak; rev \"$BOXMAKER_SECRET_FILE\" > rev","cwd":%q}`, work)})
	if r, ok := msg.(wire.ResultResponse); !ok || !strings.Contains(r.Content, "Read-only file system") {
		t.Errorf("writing into the grant's folder: %#v", msg)
	}
	if names, err := os.ReadDir(work); err != nil || len(names) != 0 {
		t.Errorf("the grant's folder holds %v (%v)", names, err)
	}
	plain := t.TempDir()
	writeGrant(t, b, "shell.toml", fmt.Sprintf("tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [%q]\n", plain))
	msg = b.call(t, wire.ToolRequest{Session: session, Call: 3, Tool: "shell", Arguments: fmt.Sprintf(`{"command":"ls -a /run/boxmaker/secret; echo ${BOXMAKER_SECRET_FILE:-none}","cwd":%q}`, plain)})
	if r, ok := msg.(wire.ResultResponse); !ok || !strings.HasSuffix(r.Content, "none\n") || strings.Contains(r.Content, "api-key") {
		t.Errorf("a later call without the secret: %#v", msg)
	}

	// What Podman keeps of a running call's container: the tmpfs, not the
	// value.
	inspected := make(chan string, 1)
	go func() { inspected <- inspectWhileRunning(b.podman, "shell", 20*time.Second) }()
	msg = b.call(t, wire.ToolRequest{Session: session, Call: 4, Tool: "shell", Arguments: fmt.Sprintf(`{"command":%q,"cwd":%q}`, `test -s "$BOXMAKER_SECRET_FILE" && sleep 2 && echo slept`, work)})
	if r, ok := msg.(wire.ResultResponse); !ok || r.Content != "slept\n" {
		t.Errorf("the slow call: %#v", msg)
	}
	inspect := <-inspected
	if !strings.Contains(inspect, "/run/boxmaker/secret") {
		t.Errorf("no running container was inspected: %s", inspect)
	}
	if leaks.String(inspect) != inspect {
		t.Errorf("podman inspect shows the secret:\n%s", inspect)
	}

	// Nothing of the value anywhere brokerd writes or says.
	scanTree(t, leaks, b.home)
	if text := b.log.String(); leaks.String(text) != text {
		t.Errorf("brokerd's log holds the secret:\n%s", text)
	}
}

// inspectWhileRunning returns podman inspect of the first running
// container of tool, as JSON, once one appears (within wait), or why not.
func inspectWhileRunning(socket, tool string, wait time.Duration) string {
	ctx, err := bindings.NewConnection(context.Background(), socket)
	if err != nil {
		return err.Error()
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		list, err := containers.List(ctx, new(containers.ListOptions).WithFilters(map[string][]string{"label": {"boxmaker.tool=" + tool}}))
		if err != nil || len(list) == 0 {
			continue
		}
		data, err := containers.Inspect(ctx, list[0].ID, nil)
		if err != nil {
			continue
		}
		b, _ := json.Marshal(data)
		return string(b)
	}
	return "no container of " + tool + " appeared"
}

// scanTree fails for every file under dir that holds the secret in a form
// redact knows.
func scanTree(t *testing.T, leaks *redact.Redactor, dir string) {
	t.Helper()
	n := 0
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if text := string(data); leaks.String(text) != text {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Errorf("scanning %s: %v (%d files)", dir, err, n)
	}
}
