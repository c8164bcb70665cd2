package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// CAFile is the per-call CA certificate's name in the proxy's directory.
const CAFile = "ca.pem"

// caLifetime is how long the per-call CA and its leaves are valid: the
// longest call (the runtime's timeout_ms is at most an hour) and a margin
// for making the container. A certificate that outlives its call is
// useless anyway: the key is gone with the proxy.
const caLifetime = time.Hour + 5*time.Minute

// ca is one call's certificate authority. Its key lives in this struct
// only: it is never written anywhere, and it is gone when the proxy is.
// The certificate carries name constraints that permit only the secret's
// hosts, so even a leaf it signed by mistake for another name would not
// verify.
type ca struct {
	cert    *x509.Certificate
	der     []byte
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey // one key for every leaf of the call

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// newCA makes a CA whose name constraints permit exactly the DNS names
// under the patterns (constraintDomains) and no IP address at all.
func newCA(patterns []string, now time.Time) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: making the call's CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: making the call's certificate key: %w", err)
	}
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "boxmaker per-call CA " + serial.Text(16)[:8]},
		NotBefore:    now.Add(-time.Minute), // the container's clock is the host's; a minute for rounding
		NotAfter:     now.Add(caLifetime),
		IsCA:         true,
		// It signs leaves only, never another CA.
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
		// Critical, as RFC 5280 §4.2.1.10 asks: a verifier that does not
		// understand name constraints must reject the chain, not ignore
		// them.
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         constraintDomains(patterns),
		ExcludedIPRanges: []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress: making the call's CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: making the call's CA: %w", err)
	}
	return &ca{cert: cert, der: der, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{}}, nil
}

// constraintDomains turns host patterns into permitted DNS name
// constraints. An RFC 5280 dNSName constraint permits the name and every
// name below it, so "*.example.com" becomes "example.com" (which also
// permits example.com itself: the proxy never makes a leaf for a host the
// secret's patterns do not match, so the constraint only has to be no
// wider than the domain). The leading-dot form ".example.com", which
// would exclude example.com, is not in RFC 5280 for DNS names; Go and
// OpenSSL read it, other verifiers may not, so it is not used.
func constraintDomains(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		d := strings.TrimPrefix(p, "*.")
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// pem is the CA's certificate as the container's trust store wants it.
func (c *ca) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})
}

// leaf returns the certificate for exactly host, made once per call and
// signed by the CA. The caller has checked that host gets the secret.
func (c *ca) leaf(host string) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.leaves[host]; ok {
		return l, nil
	}
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    c.cert.NotBefore,
		NotAfter:     c.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &c.leafKey.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("egress: making a certificate for %s: %w", host, err)
	}
	l := &tls.Certificate{Certificate: [][]byte{der, c.der}, PrivateKey: c.leafKey}
	c.leaves[host] = l
	return l, nil
}

func randSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // positive, never zero
}
