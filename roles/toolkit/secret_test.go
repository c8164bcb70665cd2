package toolkit

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// useSecretDir points the secret files at a new folder for one test.
func useSecretDir(t *testing.T) string {
	dir := t.TempDir()
	old := secretDir
	secretDir = dir
	t.Cleanup(func() { secretDir = old })
	return dir
}

// TestShellGetsItsSecretFile: the file holds the value exactly, is the
// tool's user's alone (0400), and the command finds it through the
// variable, which holds the path, not the value.
func TestShellGetsItsSecretFile(t *testing.T) {
	dir := useSecretDir(t)
	value := []byte("s3cr3t-\x00-\xff-value\n")
	sec := wire.ToolkitSecret{Path: filepath.Join(dir, "api-key"), Value: append([]byte(nil), value...)}
	res, code := call(t, Request{Tool: "shell", Command: str(`printf %s "$` + wire.ToolkitSecretEnv + `"; echo; env | grep -c s3cr3t; stat -c %a "$` + wire.ToolkitSecretEnv + `"`), Secret: &sec, OutputBytes: 1000})
	if code != exitResult || res.Text != sec.Path+"\n0\n400\n" {
		t.Fatalf("%d %+v", code, res)
	}
	got, err := os.ReadFile(sec.Path)
	if err != nil || string(got) != string(value) {
		t.Fatalf("the file holds %q (%v), want %q", got, err, value)
	}
}

// TestSecretFileRefusals: only a new file directly in the secret folder.
func TestSecretFileRefusals(t *testing.T) {
	dir := useSecretDir(t)
	if err := os.WriteFile(filepath.Join(dir, "there"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/tmp/k", filepath.Join(dir, "a", "b"), filepath.Join(dir, ".."), dir + "/", filepath.Join(dir, "there"), filepath.Join(dir, "link")} {
		res, code := call(t, Request{Tool: "shell", Command: str("echo ran"), Secret: &wire.ToolkitSecret{Path: p, Value: []byte("v")}, OutputBytes: 100})
		if code != exitFailed || res.Status != "failed" || strings.Contains(res.Text, "ran") {
			t.Errorf("%s: %d %+v", p, code, res)
		}
	}
}

// TestSecretNeverPrinted: fmt of the secret and of a request holding it
// shows the path, never the value.
func TestSecretNeverPrinted(t *testing.T) {
	s := wire.ToolkitSecret{Path: "/run/boxmaker/secret/k", Value: []byte("VALUE-123")}
	req := Request{Tool: "shell", Secret: &s}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{s, &s, req, &req} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, "VALUE") || strings.Contains(out, "56414c5545") {
				t.Errorf("%s of %T: %s", verb, v, out)
			}
		}
	}
}

// TestHTTPFetchAddsTheHeaderAndTrustsTheCA: the grant's header goes on the
// request, and the certificate in ca is trusted though the system's roots
// do not know it; without ca the same server is refused.
func TestHTTPFetchAddsTheHeaderAndTrustsTheCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "auth="+r.Header.Get("X-Api-Key"))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	proxy := startSOCKS(t, srv.Listener.Addr().String(), "a.example.com")
	header := &wire.ToolkitHeader{Name: "X-Api-Key", Value: "Bearer PLACEHOLDER"}
	res, _ := call(t, Request{Tool: "http_fetch", URL: str("https://a.example.com/"), Proxy: str(proxy.path), Header: header, CA: &ca, OutputBytes: 1000})
	if res.Status != "result" || res.Text != "auth=Bearer PLACEHOLDER" {
		t.Fatalf("with the CA: %+v", res)
	}
	res, _ = call(t, Request{Tool: "http_fetch", URL: str("https://a.example.com/"), Proxy: str(proxy.path), OutputBytes: 1000})
	if res.Status != "failed" || !strings.Contains(res.Text, "certificate") {
		t.Fatalf("without the CA: %+v", res)
	}
	// A header without its CA, or a CA without its header, does not fit.
	for _, req := range []Request{
		{Tool: "http_fetch", URL: str("https://a.example.com/"), Proxy: str(proxy.path), Header: header, OutputBytes: 10},
		{Tool: "http_fetch", URL: str("https://a.example.com/"), Proxy: str(proxy.path), CA: &ca, OutputBytes: 10},
		{Tool: "read_file", Path: str("/x"), Secret: &wire.ToolkitSecret{Path: "/run/boxmaker/secret/k"}, OutputBytes: 10},
	} {
		if res, code := call(t, req); code != exitFailed || !strings.Contains(res.Text, "do not fit") {
			t.Errorf("%+v: %d %+v", req, code, res)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o644)
	if res, _ := call(t, Request{Tool: "http_fetch", URL: str("https://a.example.com/"), Proxy: str(proxy.path), Header: header, CA: &bad, OutputBytes: 10}); !strings.Contains(res.Text, "holds no certificate") {
		t.Errorf("a bad CA: %+v", res)
	}
}
