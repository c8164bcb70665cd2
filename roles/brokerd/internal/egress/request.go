package egress

import (
	"fmt"
	"net/http"
	"strings"
)

// The request side of the secret's TLS path, beyond check's rules for the
// host and the protocol (docs/decisions.md, "The egress proxy forwards
// only what it checked"). The host gets each request as net/http parsed
// it and req.Write frames it again, never the tool's own bytes; what is
// refused here is what a host could still read differently from the
// proxy: a header that a lax parser takes for a framing one, fields sent
// after the body, and a request target that Write would not send as it
// came.

// disguisable are the names (lowercase) that say how a request is framed
// or carried, or that check refuses, and that have a '-' for a lax parser
// to find in a '_': CGI, WSGI, Rack and others read "Transfer_Encoding"
// and "Transfer-Encoding" alike, and such a host would frame the body
// differently from the proxy.
// Every Proxy-* name is one too (policy's transport headers).
var disguisable = []string{"content-length", "transfer-encoding", "keep-alive", "if-range", "http2-settings"}

// checkForm says why req may not go to the host, or "".
func checkForm(req *http.Request) string {
	// Declared trailers are fields the check never saw; Write would send
	// them after the body (undeclared ones are dropped by prepare).
	if len(req.Trailer) > 0 {
		return fmt.Sprintf("a request with trailers (Trailer: %s): fields after the body are not checked, so none go to a host that gets a secret",
			strings.Join(req.Header.Values("Trailer"), ", "))
	}
	for name := range req.Header {
		if !strings.Contains(name, "_") {
			continue
		}
		dashed := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		for _, d := range disguisable {
			if dashed == d || strings.HasPrefix(dashed, "proxy-") {
				return fmt.Sprintf("a header named %q, which a host may read as %s", name, http.CanonicalHeaderKey(dashed))
			}
		}
	}
	// What Write sends as the target: a path (origin form), "*" for
	// OPTIONS, or, for a URL with this host (checked before), its path.
	// An opaque URL ("https:x") would go as "x", a target the tool never
	// sent.
	u := req.URL
	switch {
	case u.Opaque != "":
		return fmt.Sprintf("a request target that is not a path (%q)", req.RequestURI)
	case req.RequestURI == "*" && req.Method == http.MethodOptions:
	case strings.HasPrefix(req.RequestURI, "/"):
	case u.Host != "" && (u.Scheme == "https" || u.Scheme == "http"):
	default:
		return fmt.Sprintf("a request target that is not a path (%q)", req.RequestURI)
	}
	return ""
}

// prepare makes req what the host gets: the connection's own headers
// dropped, identity encoding asked for, the placeholder in the secret's
// header replaced by the value, the connected host as Host, and no
// trailers. It reports whether the tool asked to be told to go on with
// its body (Expect: 100-continue), which the proxy answers itself.
func (s *secret) prepare(req *http.Request, host string) (expect bool) {
	dropHopByHop(req.Header)
	expect = strings.EqualFold(req.Header.Get("Expect"), "100-continue")
	req.Header.Del("Expect")
	// Identity only: an echo of the value must be visible to be taken
	// out, and a compressed body is not (the response is refused).
	req.Header.Set("Accept-Encoding", "identity")
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // no Go default added by Write
	}
	for i, v := range req.Header[s.header] {
		req.Header[s.header][i] = strings.ReplaceAll(v, s.placeholder, string(s.value))
	}
	req.Host = host
	// Write sends the trailers of the map it finds here, and the chunked
	// body's reader adds to that map whatever fields follow the last
	// chunk: with none, what follows is read and dropped.
	req.Trailer = nil
	return expect
}
