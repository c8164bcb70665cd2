package egress_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// BenchmarkSecretBody measures a large body on the secret's TLS path, on a
// kept-alive connection: every byte goes through the replacer. The body
// has no line end, so the replacer holds back its whole tail at every
// read. go test -run '^$' -bench SecretBody.
func BenchmarkSecretBody(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		body := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz0123456789sk-live-Zq8"), size/47+1)[:size]
		roots := newPKI(b, "test roots")
		srv := startServer(b, roots.serverCert(b, "secret.boxmaker.test"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		}))
		r := newRig(b, roots, map[string]*server{"secret.boxmaker.test": srv}, "secret.boxmaker.test")
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			c := r.client(nil)
			tr := c.Transport.(*http.Transport)
			tr.ForceAttemptHTTP2 = false
			defer tr.CloseIdleConnections()
			b.SetBytes(int64(size))
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, "https://secret.boxmaker.test/", nil)
				req.Header.Set("Authorization", "Bearer "+placeholder)
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != int64(size) {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}
