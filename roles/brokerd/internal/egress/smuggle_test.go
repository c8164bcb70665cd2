package egress_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Request smuggling on the secret's TLS path (issue 29): a hostile tool
// sends the proxy bytes that one parser reads as one request and another
// as two, hoping that the host finds a request the proxy never checked
// (for another Host, with a header the proxy refuses, or one that takes
// in the next, checked request and its value as its body). The proxy
// must send the host only requests it checked, framed by itself, in bytes
// that have one reading; a naive host (naivehost_test.go) and a strict
// parser (strict_test.go) must find the same requests in them.

const secretHost = "secret.boxmaker.test"

// hidden is a request the proxy must never send: for another host, with
// the placeholder that the proxy would fill in.
const hidden = "GET /hidden HTTP/1.1\r\nHost: plain.boxmaker.test\r\nAuthorization: Bearer " + placeholder + "\r\n\r\n"

// capture is a hidden request whose body takes in the start of the next
// request the proxy sends, the value in its Authorization header included.
const capture = "POST /hidden HTTP/1.1\r\nHost: plain.boxmaker.test\r\nContent-Length: 150\r\n\r\n"

// followUp is a checked request sent after every variant's bytes: the
// value goes into it, and a host that lost the framing reads it wrongly.
// X-Pad makes it long enough for capture to take in its Authorization;
// Connection: close ends the exchange once it is answered.
var followUp = "GET /after HTTP/1.1\r\nHost: " + secretHost + "\r\nConnection: close\r\nAuthorization: Bearer " + placeholder + "\r\nX-Pad: " + strings.Repeat("p", 300) + "\r\n\r\n"

func post(head, body string) string {
	return "POST /a HTTP/1.1\r\nHost: " + secretHost + "\r\n" + head + "\r\n" + body
}

func cl(body string) string { return fmt.Sprintf("Content-Length: %d\r\n", len(body)) }

func chunk(data string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(data), data) }

// smuggleCase is one variant: the bytes the tool sends before followUp,
// and either what the proxy's refusal says or, with want "", how many
// requests the host must get (followUp included).
type smuggleCase struct {
	name, send, want string
	host             int
}

var smuggleCases = []smuggleCase{
	// Content-Length against Transfer-Encoding.
	{"CL and TE, hidden after the chunked end", post(cl("0\r\n\r\n"+hidden)+"Transfer-Encoding: chunked\r\n", "0\r\n\r\n"+hidden),
		`a request for the host "plain.boxmaker.test"`, 1},
	{"TE and CL, hidden in the chunks", post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", chunk(capture)+"0\r\n\r\n"), "", 2},
	{"two equal Content-Lengths", post(cl(hidden)+cl(hidden), hidden), "", 2},
	{"two different Content-Lengths", post(cl(hidden)+"Content-Length: 5\r\n", hidden), "multiple Content-Length headers", 0},
	{"a Content-Length list", post("Content-Length: 5, 5\r\n", "abcde"), `bad Content-Length "5, 5"`, 0},
	{"a signed Content-Length", post("Content-Length: +5\r\n", "abcde"), "bad Content-Length", 0},
	{"a negative Content-Length", post("Content-Length: -1\r\n", ""), "bad Content-Length", 0},
	{"a hex Content-Length", post("Content-Length: 0x5\r\n", "abcde"), "bad Content-Length", 0},
	{"a huge Content-Length", post("Content-Length: 99999999999999999999\r\n", ""), "bad Content-Length", 0},
	{"chunked, identity", post("Transfer-Encoding: chunked, identity\r\n", "0\r\n\r\n"), "unsupported transfer encoding", 0},
	{"identity", post("Transfer-Encoding: identity\r\n"+cl(hidden), hidden), "unsupported transfer encoding", 0},
	{"gzip, chunked", post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"), "unsupported transfer encoding", 0},
	{"two Transfer-Encodings", post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"), "too many transfer encodings", 0},
	{"Chunked in capitals", post("Transfer-Encoding: CHUNKED\r\n", chunk(hidden)+"0\r\n\r\n"), "", 2},
	{"TE by obs-fold", post("Transfer-Encoding:\r\n chunked\r\n"+cl(chunk(hidden)+"0\r\n\r\n"), chunk(hidden)+"0\r\n\r\n"), "", 2},
	{"TE folded into another header", post("X-A: a\r\n Transfer-Encoding: chunked\r\n"+cl(hidden), hidden), "", 2},
	{"TE with a space before the colon", post("Transfer-Encoding : chunked\r\n"+cl("0\r\n\r\n"+capture), "0\r\n\r\n"+capture), "", 2},
	{"bare LF line ends", "POST /a HTTP/1.1\nHost: " + secretHost + "\n" + cl(hidden)[:len(cl(hidden))-2] + "\n\n" + hidden, "", 2},
	{"a bare LF after a chunk size", post("Transfer-Encoding: chunked\r\n", "3\nabc\r\n0\r\n\r\n"), "sending the request failed", 0},
	{"chunk data not ended by CRLF", post("Transfer-Encoding: chunked\r\n", "3\r\nabcX\r\n0\r\n\r\n"), "sending the request failed", 0},
	{"a chunk size over 64 bits", post("Transfer-Encoding: chunked\r\n", "10000000000000003\r\nabc\r\n0\r\n\r\n"), "sending the request failed", 0},
	{"a chunk extension", post("Transfer-Encoding: chunked\r\n", "3;x=y\r\nabc\r\n0\r\n\r\n"), "", 2},
	{"a quoted CRLF in a chunk extension", post("Transfer-Encoding: chunked\r\n", "3;x=\"\r\n0\r\n\r\n\"\r\nabc\r\n0\r\n\r\n"), "sending the request failed", 0},
	{"a bare CR in a header", post("X-A: a\rTransfer-Encoding: chunked\r\n", ""), "malformed MIME header line", 0},
	{"a NUL in a header", post("X-A: a\x00b\r\n", ""), "malformed MIME header line", 0},
	{"leading empty lines", "\r\n" + post("", ""), "malformed HTTP request", 0},
	// Header names a lax host reads as framing ('_' as '-').
	{"Content_Length", post(cl(capture)+"Content_Length: 0\r\n", capture), "Content_length", 0},
	{"Transfer_Encoding", post("Transfer_Encoding: chunked\r\n"+cl("0\r\n\r\n"+capture), "0\r\n\r\n"+capture), "Transfer_encoding", 0},
	{"If_Range", "GET /a HTTP/1.1\r\nHost: " + secretHost + "\r\nIf_Range: x\r\n\r\n", "If_range", 0},
	{"Keep_Alive", "GET /a HTTP/1.1\r\nHost: " + secretHost + "\r\nKeep_Alive: 5\r\n\r\n", "Keep_alive", 0},
	// Trailers: header fields after the body, which the check never saw.
	{"a declared Host trailer", post("Authorization: Bearer "+placeholder+"\r\nTrailer: Host\r\nTransfer-Encoding: chunked\r\n", chunk("abc")+"0\r\nHost: plain.boxmaker.test\r\n\r\n"),
		"trailer", 0},
	{"a declared Range trailer", post("Trailer: Range\r\nTransfer-Encoding: chunked\r\n", "0\r\nRange: bytes=5-\r\n\r\n"), "trailer", 0},
	{"an undeclared Host beside a declared trailer", post("Authorization: Bearer "+placeholder+"\r\nTrailer: X-A\r\nTransfer-Encoding: chunked\r\n", "0\r\nX-A: 1\r\nHost: plain.boxmaker.test\r\n\r\n"),
		"trailer", 0},
	{"undeclared trailers", post("Transfer-Encoding: chunked\r\n", "0\r\nHost: plain.boxmaker.test\r\nTransfer-Encoding: chunked\r\nRange: bytes=1-\r\n\r\n"), "", 2},
	{"a Transfer-Encoding trailer", post("Trailer: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"), `bad trailer key "Transfer-Encoding"`, 0},
	// Pipelining and the next request on a kept connection.
	{"a pipelined request for another host", "GET /a HTTP/1.1\r\nHost: " + secretHost + "\r\n\r\n" + hidden, `a request for the host "plain.boxmaker.test"`, 1},
	{"a body on a GET, then another host", "GET /a HTTP/1.1\r\nHost: " + secretHost + "\r\nContent-Length: 0\r\n\r\n" + hidden, `a request for the host "plain.boxmaker.test"`, 1},
	{"Connection: close, then more", "GET /a HTTP/1.1\r\nHost: " + secretHost + "\r\nConnection: close\r\n\r\n" + hidden, "", 1},
	{"an absolute URL for another host", "GET https://plain.boxmaker.test/x HTTP/1.1\r\nHost: " + secretHost + "\r\n\r\n", `a request for the host "plain.boxmaker.test"`, 0},
	{"an absolute URL for this host", "GET https://" + secretHost + ":443/x?y HTTP/1.1\r\nHost: " + secretHost + "\r\n\r\n", "", 2},
	{"an opaque request target", "GET https:opaque HTTP/1.1\r\nHost: " + secretHost + "\r\n\r\n", "request target", 0},
	{"a CONNECT", "CONNECT plain.boxmaker.test:443 HTTP/1.1\r\nHost: " + secretHost + "\r\n\r\n", "a CONNECT request", 0},
	{"an h2c upgrade", "GET / HTTP/1.1\r\nHost: " + secretHost + "\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
		`a protocol upgrade (Upgrade: "h2c")`, 0},
	{"the HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "a request in HTTP/2.0", 0},
	{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: " + secretHost + "\r\nConnection: keep-alive\r\n\r\n", "a request in HTTP/1.0", 0},
	{"HTTP/1.2", "GET / HTTP/1.2\r\nHost: " + secretHost + "\r\n\r\n", "a request in HTTP/1.2", 0},
	{"Expect: 100-continue", post("Expect: 100-continue\r\n"+cl(hidden), hidden), "", 2},
	{"no Host", "GET / HTTP/1.1\r\n\r\n", `a request for the host ""`, 0},
	{"two Hosts", "GET / HTTP/1.1\r\nHost: " + secretHost + "\r\nHost: plain.boxmaker.test\r\n\r\n", "too many Host headers", 0},
	{"a Host with a trailing dot", "GET / HTTP/1.1\r\nHost: " + secretHost + ".\r\n\r\n", `a request for the host "secret.boxmaker.test."`, 0},
	{"a Host in capitals", "GET / HTTP/1.1\r\nHost: SECRET.boxmaker.test\r\n\r\n", "", 2},
}

// TestTheHostGetsOnlyCheckedRequests plays each variant on a connection of
// its own and checks what the tool was answered and what the host got.
func TestTheHostGetsOnlyCheckedRequests(t *testing.T) {
	roots := newPKI(t, "test roots")
	host := startNaiveHost(t, roots.serverCert(t, secretHost))
	r := newRig(t, roots, map[string]*server{secretHost: {addr: host.addr}}, secretHost)
	for _, tc := range smuggleCases {
		t.Run(tc.name, func(t *testing.T) {
			host.reset()
			statuses, refusal := r.play(t, tc.send+followUp)
			if tc.want != "" {
				if len(statuses) == 0 || statuses[len(statuses)-1] != 502 || !strings.Contains(refusal, tc.want) ||
					!strings.Contains(refusal, "see docs/runbook.md#secret-request-refused") {
					t.Errorf("answers %v %q; want a 502 saying %q", statuses, refusal, tc.want)
				}
			} else if len(statuses) != tc.host || strings.Count(fmt.Sprint(statuses), "200") != tc.host {
				t.Errorf("answers %v %q; want %d times 200", statuses, refusal, tc.host)
			}
			checkHostSaw(t, host, tc.host, tc.want != "")
		})
	}
}

// play sends raw on a TLS connection to the secret host through the proxy
// and reads every answer until the connection ends. It returns the final
// status codes (interim ones skipped) and the last 502's body.
func (r *rig) play(t *testing.T, raw string) ([]int, string) {
	t.Helper()
	conn, err := r.rawTLS(t, secretHost, &tls.Config{ServerName: secretHost, RootCAs: r.trust})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.WriteString(conn, raw)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	var statuses []int
	var refusal string
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return statuses, refusal
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode < 200 {
			continue
		}
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == 502 {
			refusal = string(b)
		}
	}
}

// checkHostSaw waits for the host's connection to end and checks that it
// got exactly n requests, each one the proxy checked: for the secret's
// host, with a path, no header the check refuses, the value only in the
// Authorization header, and in bytes the strict parser reads the same way.
func checkHostSaw(t *testing.T, host *naiveHost, n int, cut bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(host.connections()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	conns := host.connections()
	if len(conns) != 1 {
		t.Fatalf("the host had %d connections, want 1", len(conns))
	}
	seen := host.requests()
	for _, req := range seen {
		if req.host != secretHost || !strings.HasPrefix(req.target, "/") || strings.Contains(req.target, "hidden") {
			t.Errorf("the host got %s %s for the host %q", req.method, req.target, req.host)
		}
		for name, vs := range req.header {
			switch name {
			case "range", "if-range", "upgrade", "expect", "trailer", "keep-alive", "te":
				t.Errorf("the host got %s %s with %s: %q", req.method, req.target, name, vs)
			}
			if name != "authorization" && strings.Contains(strings.Join(vs, ""), value) {
				t.Errorf("the host got the value in %s", name)
			}
		}
		if strings.Contains(req.body, value) {
			t.Errorf("the host got the value in the body of %s %s", req.method, req.target)
		}
	}
	if len(seen) != n {
		t.Errorf("the host got %d requests, want %d: %q", len(seen), n, seen)
	}
	strict, rest, err := strictParse(conns[0])
	if len(strict) != len(seen) || !cut && len(rest) != 0 {
		t.Errorf("the strict parser read %d requests, the naive host %d (left %q: %v)", len(strict), len(seen), rest, err)
	}
	for i := range min(len(strict), len(seen)) {
		s, v := strict[i], seen[i]
		if s.method != v.method || s.target != v.target || s.host != v.host || s.body != v.body {
			t.Errorf("request %d: strictly %s %s (%s, %q), naively %s %s (%s, %q)", i, s.method, s.target, s.host, s.body, v.method, v.target, v.host, v.body)
		}
	}
}
