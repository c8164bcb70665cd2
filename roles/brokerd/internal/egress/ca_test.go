package egress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestCANameConstraints measures what Go's verifier makes of the per-call
// CA's constraints: a leaf the CA signs verifies only for a name under
// one of the secret's patterns, whatever name it carries.
func TestCANameConstraints(t *testing.T) {
	now := time.Now()
	c, err := newCA([]string{"*.api.example.com", "auth.example.org"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.cert.PermittedDNSDomains; !slices.Equal(got, []string{"api.example.com", "auth.example.org"}) || !c.cert.PermittedDNSDomainsCritical {
		t.Fatalf("constraints %q critical %v", got, c.cert.PermittedDNSDomainsCritical)
	}
	if !c.cert.IsCA || !c.cert.MaxPathLenZero || c.cert.NotAfter.Sub(now) > 2*time.Hour {
		t.Fatalf("CA: IsCA %v MaxPathLenZero %v NotAfter %v", c.cert.IsCA, c.cert.MaxPathLenZero, c.cert.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.cert)
	verify := func(host string) error {
		l, err := c.leaf(host) // leaf signs whatever it is asked: the test asks for names it must never be asked for
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(l.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		_, err = cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots})
		return err
	}
	for host, ok := range map[string]bool{
		"v1.api.example.com":   true,
		"a.b.api.example.com":  true,
		"auth.example.org":     true,
		"api.example.com":      true, // the wildcard's domain itself: RFC 5280's constraint includes it (ca.go says why that is enough)
		"x.auth.example.org":   true, // below an exact name: the same rule; the proxy never makes such a leaf
		"example.com":          false,
		"evilapi.example.com":  false,
		"api.example.com.evil": false,
		"other.example.org":    false,
		"google.com":           false,
	} {
		err := verify(host)
		var invalid x509.CertificateInvalidError
		switch {
		case ok && err != nil:
			t.Errorf("%s: %v, want it to verify", host, err)
		case !ok && (!errors.As(err, &invalid) || invalid.Reason != x509.CANotAuthorizedForThisName):
			t.Errorf("%s: %v, want CANotAuthorizedForThisName", host, err)
		}
	}

	// An IP address in a leaf is outside every constraint too.
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), DNSNames: []string{"v1.api.example.com"},
		IPAddresses: []net.IP{net.ParseIP("93.184.216.34")}, NotBefore: c.cert.NotBefore, NotAfter: c.cert.NotAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &c.leafKey.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	ipLeaf, _ := x509.ParseCertificate(der)
	var invalid x509.CertificateInvalidError
	if _, err := ipLeaf.Verify(x509.VerifyOptions{DNSName: "93.184.216.34", Roots: roots}); !errors.As(err, &invalid) || invalid.Reason != x509.CANotAuthorizedForThisName {
		t.Errorf("a leaf with an IP address: %v", err)
	}
	// And the CA signs nothing that can sign: a leaf with IsCA set does
	// not make a chain below it.
	sub := &x509.Certificate{SerialNumber: big.NewInt(8), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		NotBefore: c.cert.NotBefore, NotAfter: c.cert.NotAfter}
	subDER, _ := x509.CreateCertificate(rand.Reader, sub, c.cert, &c.leafKey.PublicKey, c.key)
	subCert, _ := x509.ParseCertificate(subDER)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(9), DNSNames: []string{"v1.api.example.com"}, NotBefore: c.cert.NotBefore,
		NotAfter: c.cert.NotAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, _ := x509.CreateCertificate(rand.Reader, leafTmpl, subCert, &c.leafKey.PublicKey, c.leafKey)
	deep, _ := x509.ParseCertificate(leafDER)
	inter := x509.NewCertPool()
	inter.AddCert(subCert)
	if _, err := deep.Verify(x509.VerifyOptions{DNSName: "v1.api.example.com", Roots: roots, Intermediates: inter}); err == nil {
		t.Error("a chain through a sub-CA verified despite MaxPathLen 0")
	}
}

// TestTheCAKeyIsNeverOnDisk: the proxy's directory holds the socket and
// the certificate, and no file in it has the CA's or the leaves' private
// key in any encoding.
func TestTheCAKeyIsNeverOnDisk(t *testing.T) {
	p, err := StartWith(t.TempDir(), []string{"*.example.com"}, testSecret("api.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.ca.leaf("api.example.com"); err != nil {
		t.Fatal(err)
	}
	var forms [][]byte
	for _, k := range []any{p.ca.key, p.ca.leafKey} {
		pkcs8, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, pkcs8, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	}
	for _, k := range []*ecdsa.PrivateKey{p.ca.key, p.ca.leafKey} {
		raw, err := k.Bytes() // the bare scalar
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, raw)
	}
	dir := filepath.Dir(p.Path())
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("PRIVATE KEY")) {
			t.Errorf("%s has a PEM private key", e.Name())
		}
		for _, f := range forms {
			if bytes.Contains(b, f) {
				t.Errorf("%s holds a private key", e.Name())
			}
		}
	}
	if !slices.Equal(names, []string{CAFile, SocketName}) {
		t.Errorf("the proxy's directory holds %q", names)
	}
	fi, err := os.Stat(p.CAPath())
	if err != nil || fi.Mode().Perm() != 0o644 || filepath.Dir(p.CAPath()) != dir {
		t.Fatalf("CAPath %s: %v %v", p.CAPath(), fi, err)
	}
	b, _ := os.ReadFile(p.CAPath())
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 || !bytes.Equal(block.Bytes, p.ca.der) {
		t.Fatalf("CAPath holds %q", b)
	}
}
