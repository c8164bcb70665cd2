package egress_test

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/egress"
)

// FuzzRequestSide: whatever bytes the tool sends on the secret's TLS path,
// the requests the proxy lets through, as it writes them to the host, have
// one reading: the naive host and the strict parser find the same
// requests, each for the secret's host, with a path, none of the headers
// the check refuses, and the value in the Authorization header only.
func FuzzRequestSide(f *testing.F) {
	for _, tc := range smuggleCases {
		f.Add([]byte(tc.send + followUp))
	}
	p, err := egress.StartWith(f.TempDir(), []string{"*.boxmaker.test"}, &egress.Secret{
		Name: "api-key", Header: "Authorization", Placeholder: placeholder, Value: []byte(value), Hosts: []string{secretHost},
	})
	if err != nil {
		f.Fatal(err)
	}
	defer p.Close()
	f.Fuzz(func(t *testing.T, in []byte) {
		tool := bufio.NewReader(bytes.NewReader(in))
		var wire bytes.Buffer
		sent := 0
		for range 8 {
			req, err := http.ReadRequest(tool)
			if err != nil || egress.CheckAndPrepare(p, secretHost, req) != "" {
				break
			}
			if err := req.Write(&wire); err != nil {
				break // the host gets a request cut short, then the end
			}
			sent++
		}
		var naive []naiveRequest
		host := bufio.NewReader(bytes.NewReader(wire.Bytes()))
		for {
			req, ok := naiveRead(host)
			if !ok {
				break
			}
			naive = append(naive, req)
		}
		strict, _, _ := strictParse(wire.Bytes())
		if len(strict) != sent || len(naive) != sent {
			t.Fatalf("the proxy sent %d requests; the strict parser reads %d, the naive host %d:\n%q", sent, len(strict), len(naive), wire.Bytes())
		}
		for i, s := range strict {
			v := naive[i]
			if s.method != v.method || s.target != v.target || s.host != v.host || s.body != v.body {
				t.Fatalf("request %d: strictly %s %s (%s, %q), naively %s %s (%s, %q)", i, s.method, s.target, s.host, s.body, v.method, v.target, v.host, v.body)
			}
			if v.host != secretHost || !strings.HasPrefix(v.target, "/") && v.target != "*" {
				t.Fatalf("request %d: %s %s for %q", i, v.method, v.target, v.host)
			}
			for name, vs := range v.header {
				switch name {
				case "range", "if-range", "upgrade", "expect", "trailer", "keep-alive", "te", "http2-settings":
					t.Fatalf("request %d: %s: %q", i, name, vs)
				}
				if name != "authorization" && strings.Contains(strings.Join(vs, ""), value) {
					t.Fatalf("request %d: the value in %s", i, name)
				}
			}
			if strings.Contains(v.body, value) {
				t.Fatalf("request %d: the value in the body", i)
			}
		}
	})
}
