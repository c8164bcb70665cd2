package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/fakellama"
	"boxmaker/internal/syncbuf"
)

// loopd learns the server's slots from /props at start and says how many
// it uses; a server whose /props does not say is used as one slot, and
// the owner is told.
func TestServeLearnsSlots(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hideProp bool
		want     string
	}{
		{"total_slots", false, "server slots 3)"},
		{"no total_slots", true, "the model server's /props gives no total_slots; every session uses its slot 0, one request at a time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := setup(t)
			ln, err := net.Listen("unix", cfg.Model.Socket)
			if err != nil {
				t.Fatal(err)
			}
			fake := fakellama.New(fakellama.Options{Slots: 3})
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.hideProp && r.URL.Path == "/props" {
					rec := httptest.NewRecorder()
					fake.ServeHTTP(rec, r)
					w.Write([]byte(strings.Replace(rec.Body.String(), `"total_slots":3,`, "", 1)))
					return
				}
				fake.ServeHTTP(w, r)
			})}
			go hs.Serve(ln)
			t.Cleanup(func() { hs.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan struct{})
			done := make(chan error, 1)
			var stderr syncbuf.Buffer
			go func() { done <- Run(ctx, Options{Config: cfg, Stderr: &stderr, Ready: func() { close(ready) }}) }()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("serve ended: %v\n%s", err, stderr.String())
			case <-time.After(time.Minute):
				t.Fatal("loopd did not start")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}
