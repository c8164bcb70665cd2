package egress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/containers/podman/v5/pkg/api/handlers"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	dockerContainer "github.com/docker/docker/api/types/container"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/egress"
	"boxmaker/roles/brokerd/internal/podman"
	"boxmaker/roles/brokerd/internal/podman/podmantest"
	"boxmaker/roles/brokerd/internal/redact"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

// secretValue is the test's secret: random, so that no fixed text in the
// code or the image can hold it by chance.
func secretValue(t *testing.T) []byte {
	return []byte(fmt.Sprintf("sk-live-%x", sha(t.Name())))
}

func sha(s string) []byte {
	b := wire.Sha256([]byte(s + fmt.Sprint(os.Getpid())))
	return b[:16]
}

// inContainer is what a container held while its call ran: what Podman
// shows of it (inspect), and, from inside, every process's environment
// and every file on its writable and mounted places.
type inContainer struct {
	mu      sync.Mutex
	inspect []string
	inside  []string
}

// look records inContainer for every running container of the tool.
func (c *inContainer) look(t *testing.T, socket, tool string) {
	ctx, err := bindings.NewConnection(context.Background(), socket)
	if err != nil {
		t.Error(err)
		return
	}
	list, err := containers.List(ctx, new(containers.ListOptions).WithFilters(map[string][]string{"label": {"boxmaker.tool=" + tool}}))
	if err != nil || len(list) == 0 {
		t.Errorf("no running %s container to look at: %v", tool, err)
		return
	}
	for _, ct := range list {
		data, err := containers.Inspect(ctx, ct.ID, nil)
		if err != nil {
			t.Error(err)
			continue
		}
		b, _ := json.Marshal(data)
		script := `for f in /proc/[0-9]*/environ; do echo "== $f"; tr '\0' '\n' < $f; done; env; ` +
			`find /run /tmp /var/tmp -type f 2>/dev/null | while read f; do echo "== $f"; cat "$f"; done`
		id, err := containers.ExecCreate(ctx, ct.ID, &handlers.ExecCreateConfig{ExecOptions: dockerContainer.ExecOptions{
			Cmd: []string{"/bin/sh", "-c", script}, AttachStdout: true, AttachStderr: true}})
		if err != nil {
			t.Error(err)
			continue
		}
		var out bytes.Buffer
		if err := containers.ExecStartAndAttach(ctx, id, new(containers.ExecStartAndAttachOptions).
			WithOutputStream(&out).WithErrorStream(&out).WithAttachOutput(true).WithAttachError(true)); err != nil {
			t.Error(err)
		}
		c.mu.Lock()
		c.inspect, c.inside = append(c.inspect, string(b)), append(c.inside, out.String())
		c.mu.Unlock()
	}
}

var placeholderRE = regexp.MustCompile(`boxmaker-secret-[0-9a-f]{48}`)

// TestSecretHeaderInAContainer is issue 15's header path end to end: a
// real container, the toolkit's GET through the call's egress proxy, a
// local HTTPS server standing in for two granted hosts. The secret host
// gets the real value in the grant's header; the other granted host gets
// the placeholder, unchanged; the echo of the value comes back as the
// placeholder; and the container holds the value nowhere, by what Podman
// shows of it and by what a process inside it can read.
func TestSecretHeaderInAContainer(t *testing.T) {
	socket := podmantest.Socket(t)
	value := secretValue(t)
	leaks := redact.New("api-key", value)
	seen := &inContainer{}
	var mu sync.Mutex
	got := map[string]string{} // host -> Authorization
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: podmantest.ServerTLS(t), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		got[r.Host] = auth
		mu.Unlock()
		// The call's container is running now, waiting for this answer.
		seen.look(t, socket, "http_fetch")
		w.Header().Set("X-Echo", auth)
		fmt.Fprintf(w, "you sent %s", auth)
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })
	addr := netip.MustParseAddrPort(ln.Addr().String())
	defer egress.SetTestHosts(map[string]netip.AddrPort{"api.boxmaker.test": addr, "other.boxmaker.test": addr}, nil)()
	defer egress.SetTestRoots(podmantest.CAPool(t))()

	secrets := t.TempDir()
	if err := os.Chmod(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "api-key"), append(value, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cfg := podman.DefaultConfig()
	cfg.Socket, cfg.Image, cfg.TimeoutMS = socket, podmantest.Image(t, socket), 15_000
	rt, err := podman.New(context.Background(), cfg, &log, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rt.SetSecrets(func(name string) ([]byte, error) { return policy.ReadSecret(secrets, name) })
	grants := t.TempDir()
	g := `tool = "http_fetch"
mode = "auto"
max_taint = "secret"
result_class = "secret"
secret = "api-key"
secret_header = "Authorization"
secret_format = "Bearer {}"
secret_hosts = ["api.boxmaker.test"]
[constraints]
hosts = ["*.boxmaker.test"]
`
	if err := os.WriteFile(filepath.Join(grants, "fetch.toml"), []byte(g), 0o600); err != nil {
		t.Fatal(err)
	}
	fetch := func(call wire.CallID, url string) wire.ToolResponse {
		sid, _ := wire.NewSessionID("s-1")
		d := policy.Decide(grants, wire.ToolRequest{Session: sid, Call: call, Tool: "http_fetch", Arguments: `{"url":"` + url + `"}`},
			policy.State{Taint: wire.Private}, wire.Now())
		res, err := runner.Run(context.Background(), d, rt)
		if err != nil {
			t.Fatalf("%s: %v (%v)", url, err, d.Outcome())
		}
		if res.Class != wire.Secret {
			t.Errorf("%s: class %v, want secret", url, res.Class)
		}
		return res.Response
	}

	var results []string
	resp := fetch(1, "https://api.boxmaker.test/")
	r, ok := resp.(wire.ResultResponse)
	if !ok {
		t.Fatalf("the secret host: %#v", resp)
	}
	results = append(results, r.Content)
	if got["api.boxmaker.test"] != "Bearer "+string(value) {
		t.Errorf("the secret host got Authorization %q, want the value", got["api.boxmaker.test"])
	}
	// The echo comes back as the placeholder the container sent.
	if !regexp.MustCompile(`^HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\n\nyou sent Bearer boxmaker-secret-[0-9a-f]{48}$`).MatchString(r.Content) {
		t.Errorf("the secret host's answer: %q", r.Content)
	}

	resp = fetch(2, "https://other.boxmaker.test/")
	if r, ok := resp.(wire.ResultResponse); !ok {
		t.Fatalf("the other host: %#v", resp)
	} else {
		results = append(results, r.Content)
	}
	other := got["other.boxmaker.test"]
	if !regexp.MustCompile(`^Bearer boxmaker-secret-[0-9a-f]{48}$`).MatchString(other) {
		t.Errorf("the granted host outside secret_hosts got %q, want the placeholder", other)
	}
	// One placeholder per call: the first call's is worth nothing later.
	if first := placeholderRE.FindString(results[0]); first == "" || strings.Contains(other, first) {
		t.Errorf("placeholders: first call %q, second %q", first, other)
	}

	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.inspect) != 2 || len(seen.inside) != 2 {
		t.Fatalf("looked into %d/%d containers, want 2", len(seen.inspect), len(seen.inside))
	}
	for i := range seen.inspect {
		if !strings.Contains(seen.inside[i], "/run/boxmaker/ca.pem") || !strings.Contains(seen.inside[i], "BEGIN CERTIFICATE") {
			t.Errorf("container %d: the proxy's CA is not where the toolkit reads it:\n%s", i, seen.inside[i])
		}
		// The toolkit, which holds the request, is not dumpable.
		if !strings.Contains(seen.inside[i], "/proc/1/environ: Permission denied") || !strings.Contains(seen.inside[i], "PWD=/") {
			t.Errorf("container %d: the look inside did not run as expected:\n%s", i, seen.inside[i])
		}
	}
	for what, texts := range map[string][]string{"podman inspect": seen.inspect, "inside the container": seen.inside,
		"the results": results, "brokerd's log": {log.String()}} {
		for _, text := range texts {
			if leaks.String(text) != text {
				t.Errorf("%s holds the secret in some form:\n%s", what, text)
			}
		}
	}
}
