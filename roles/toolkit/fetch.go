package toolkit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"boxmaker/wire"
)

// maxRedirects caps the redirects http_fetch follows. Each one goes through
// the egress proxy again, which refuses any host the grant does not cover.
const maxRedirects = 5

// testRoots replaces the system's certificate roots in this package's own
// tests; nothing else sets it.
var testRoots *x509.CertPool

// fetchRequest is one http_fetch: the URL, the egress proxy's socket in
// the container, and, for a grant with a secret, the header to add (it
// holds a per-call placeholder; the proxy puts the secret in) and the
// proxy's CA, which must be trusted for the hosts where it does.
type fetchRequest struct {
	url, proxy string
	header     *wire.ToolkitHeader
	ca         *string
}

// httpFetch GETs the URL through the SOCKS5 proxy on the Unix socket proxy,
// the container's only way out: it has no network of its own. Names are
// sent to the proxy, never resolved here; the proxy resolves them and
// decides.
func httpFetch(f fetchRequest, max int64) Response {
	rawURL := f.url
	// nil roots: the system's, /etc/ssl/certs/ca-certificates.crt in the
	// tool image.
	roots := testRoots
	if f.ca != nil {
		var err error
		if roots, err = withCA(roots, *f.ca); err != nil {
			return failed("http_fetch: " + err.Error())
		}
	}
	client := &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return dialSOCKS(ctx, f.proxy, addr)
			},
			TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
			ForceAttemptHTTP2: true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "https" || (req.URL.Port() != "" && req.URL.Port() != "443") {
				return fmt.Errorf("refused a redirect to %s: only https on port 443 is fetched", req.URL.Redacted())
			}
			return nil
		},
	}
	// The toolkit exits after one fetch; closing is for tidiness, and for
	// this package's tests, whose fake proxy waits for its connections.
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return failed("http_fetch: " + err.Error())
	}
	req.Header.Set("User-Agent", "boxmaker-http-fetch/1")
	if f.header != nil {
		req.Header.Set(f.header.Name, f.header.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return failed("http_fetch: " + fetchError(err))
	}
	defer resp.Body.Close()
	body, err := readCapped(resp.Body, max)
	if err != nil {
		return failed(fmt.Sprintf("http_fetch: reading the body of %s: %s", resp.Request.URL.Redacted(), fetchError(err)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s\n", resp.Status)
	if final := resp.Request.URL.String(); final != rawURL {
		fmt.Fprintf(&b, "URL: %s\n", final)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, "Content-Type: %s\n", ct)
	}
	b.WriteString("\n")
	// Header values come from the server: clip makes them text too.
	text, note := body.text("content")
	return Response{Status: "result", Head: clip(b.String()), Text: text, Tail: note}
}

// withCA is roots (nil: the system's) and the PEM certificate in file.
func withCA(roots *x509.CertPool, file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read the egress proxy's CA: %v", err)
	}
	if roots == nil {
		if roots, err = x509.SystemCertPool(); err != nil {
			return nil, fmt.Errorf("cannot read the system's certificate roots: %v", err)
		}
	} else {
		roots = roots.Clone()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the egress proxy's CA in %s holds no certificate", file)
	}
	return roots, nil
}

// fetchError is err without the Go client's "Get \"url\": " prefix, which
// repeats what the model asked for.
func fetchError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
