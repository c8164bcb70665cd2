package egress_test

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkSmallGET measures what the TLS-terminating path adds to one
// small GET, against the blind relay to the same local server through the
// same proxy: on a new connection each time (the tool's TLS handshake,
// the proxy's own to the host, the CA's leaf made once), and on a kept-
// alive one (the request and response handling alone). Compare the
// sub-benchmarks of one run: go test -run '^$' -bench SmallGET.
func BenchmarkSmallGET(b *testing.B) {
	roots := newPKI(b, "test roots")
	srv := startServer(b, roots.serverCert(b, "secret.boxmaker.test", "plain.boxmaker.test"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	}))
	r := newRig(b, roots, map[string]*server{"secret.boxmaker.test": srv, "plain.boxmaker.test": srv}, "secret.boxmaker.test")
	for _, bc := range []struct{ name, host string }{
		{"relay", "plain.boxmaker.test"},
		{"terminate", "secret.boxmaker.test"},
	} {
		for _, keepAlive := range []bool{false, true} {
			name := bc.name + "/new-connection"
			if keepAlive {
				name = bc.name + "/kept-alive"
			}
			b.Run(name, func(b *testing.B) {
				c := r.client(nil)
				tr := c.Transport.(*http.Transport)
				tr.DisableKeepAlives = !keepAlive
				// Both paths speak HTTP/1.1, so that the difference is the
				// proxy's work, not the protocol's.
				tr.ForceAttemptHTTP2 = false
				defer tr.CloseIdleConnections()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodGet, "https://"+bc.host+"/", nil)
					req.Header.Set("Authorization", "Bearer "+placeholder)
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(body) != `{"ok":true}` {
						b.Fatalf("%q %v", body, err)
					}
				}
			})
		}
	}
}
