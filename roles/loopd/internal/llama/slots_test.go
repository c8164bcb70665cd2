package llama

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/internal/fakellama"
)

func TestTotalSlots(t *testing.T) {
	_, sock := startFake(t, fakellama.Options{Slots: 3})
	if n, ok, err := client(t, sock).TotalSlots(context.Background()); n != 3 || !ok || err != nil {
		t.Fatalf("fake with 3 slots: %d %v %v", n, ok, err)
	}
	for _, tc := range []struct {
		props string
		n     int
		ok    bool
		err   string
	}{
		{`{"default_generation_settings":{"n_ctx":4096}}`, 1, false, ""},
		{`{"total_slots":0}`, 1, false, ""},
		{`{"total_slots":2}`, 2, true, ""},
		{`{"total_slots":1025}`, 0, false, "total_slots 1025, more than loopd will use (1024)"},
		{`{"total_slots":"2"}`, 0, false, "not JSON"},
	} {
		sock := propsServer(t, tc.props)
		n, ok, err := client(t, sock).TotalSlots(context.Background())
		if n != tc.n || ok != tc.ok || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %d %v %v", tc.props, n, ok, err)
		}
	}
}

// propsServer answers GET /props with props on a Unix socket.
func propsServer(t *testing.T, props string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "props")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "infer.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(props))
	})}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done; os.RemoveAll(dir) })
	return sock
}
