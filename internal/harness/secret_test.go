package harness_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// TestSecretStaysInBrokerd is issue 15's whole-system check, every role a
// real process: an ask grant hands a shell its secret as a file; the
// model, told by "a page it read", prints the secret in base64; the owner
// approves in the terminal; the model gets the redacted result, and the
// session, now secret, is denied the http_fetch that would carry the
// secret out. Then nothing the system wrote or said holds the secret:
// no file under the test's folder but the secret's own (the audit log,
// the session logs loopd replays to the model, broker state, configs),
// and no line any process printed (brokerd, loopd, inferproxy, the
// stand-in model, Podman's service).
func TestSecretStaysInBrokerd(t *testing.T) {
	h, log := start(t, 120000)
	value := []byte(fmt.Sprintf("sk-%x", wire.Sha256([]byte(t.Name()+fmt.Sprint(os.Getpid())))))[:36]
	if err := os.WriteFile(filepath.Join(h.SecretsDir(), "api-key"), append(value, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	grants := map[string]string{
		// Replaces the demo's shell grant on the same folder.
		"scratch-shell.toml": fmt.Sprintf("tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n"+
			"secret = \"api-key\"\nsecret_deliver = \"file\"\n[constraints]\npaths = [%q]\n", h.Scratch()),
		"fetch.toml": "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\nhosts = [\"example.com\"]\n",
	}
	for name, text := range grants {
		if err := os.WriteFile(filepath.Join(h.GrantsDir(), name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	term := chat(t, h)
	at := term.expect(0, "you> ")
	term.typeLine(`run: base64 "$BOXMAKER_SECRET_FILE"`)
	at = term.expect(at, "grant scratch-shell  taint private")
	at = term.expect(at, "? [y/N] ")
	term.typeLine("y")
	at = term.expect(at, "> [secret:api-key]")
	at = term.expect(at, "you> ")
	term.typeLine("Fetch a web page for me.")
	at = term.expect(at, "Denied: this session has seen data too sensitive for this call.")
	term.expect(at, "you> ")
	if got := kinds(events(t, h)); got != "decision:ask approval:approved result:result decision:taint_too_high" {
		t.Fatalf("audit events: %s", got)
	}
	verify(t, h)
	noLeftovers(t, h)

	// The scan, over every file under the test's folder but the secret's
	// own, and everything the processes and the chat printed.
	forms := leakForms(value)
	n := 0
	root := filepath.Dir(h.Home)
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		// The secret's own file; Podman's image and layer stores (the
		// tool image's files). Its containers' state, its database and its
		// run folder are read.
		storage := filepath.Join(h.Home, "podman", "storage")
		if path == h.SecretsDir() || path == filepath.Join(storage, "overlay") || path == filepath.Join(storage, "overlay-images") || path == filepath.Join(storage, "overlay-layers") {
			return filepath.SkipDir
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if f := holds(data, forms); f != "" {
			t.Errorf("%s holds the secret (%s)", path, f)
		}
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("scanning %s: %v (%d files)", root, err, n)
	}
	for what, text := range map[string]string{"the processes' output": log.String(), "the chat": term.out.String()} {
		if f := holds([]byte(text), forms); f != "" {
			t.Errorf("%s holds the secret (%s)", what, f)
		}
	}
}

// leakForms are the value and its standard encodings, as the scan looks
// for them: written independently of brokerd's redact package (which this
// package may not import), so that the scan is a second opinion. Base64
// runs drop their last four characters, which depend on what follows the
// value; hex is looked for in lower case.
func leakForms(v []byte) map[string]string {
	b64 := func(e *base64.Encoding) string { s := e.EncodeToString(v); return s[:len(s)-4] }
	return map[string]string{"the exact bytes": string(v), "base64": b64(base64.StdEncoding),
		"base64url": b64(base64.URLEncoding), "hex": hex.EncodeToString(v)}
}

// holds names the form of the secret data holds, once whitespace is
// removed (encoders wrap lines), or "".
func holds(data []byte, forms map[string]string) string {
	flat := strings.Join(strings.Fields(string(data)), "")
	for name, f := range forms {
		hay := flat
		if name == "hex" {
			hay = strings.ToLower(flat)
		}
		if strings.Contains(hay, f) || (name == "the exact bytes" && bytes.Contains(data, []byte(f))) {
			return name
		}
	}
	return ""
}
