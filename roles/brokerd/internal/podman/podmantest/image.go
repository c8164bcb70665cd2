package podmantest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/image"
)

// BuildTags are the tags the Podman bindings need (docs/decisions.md,
// "Podman build tags"); the justfile's GOFLAGS carries the same list, and
// a test checks that they agree.
const BuildTags = "remote,exclude_graphdriver_btrfs,btrfs_noversion,exclude_graphdriver_devicemapper,containers_image_openpgp"

// TestDomain is the domain of the test HTTPS server's certificate: the
// certificate is for TestDomain and *.TestDomain, signed by a test CA
// that only the test image trusts.
const TestDomain = "boxmaker.test"

var built struct {
	once    sync.Once
	dir     string
	toolkit string
	bundle  string
	server  tls.Certificate
	ca      []byte // the test CA's certificate, PEM
	err     error
	images  sync.Map // socket -> image id
}

// Toolkit returns a static boxmaker executable, built once per process
// with CGO_ENABLED=0, as just build makes it.
func Toolkit(t testing.TB) string {
	t.Helper()
	prepare(t)
	return built.toolkit
}

// ServerTLS is the test HTTPS server's configuration.
func ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	prepare(t)
	return &tls.Config{Certificates: []tls.Certificate{built.server}}
}

// CAPool holds the test CA alone: what a client outside the image (the
// egress proxy, in tests) must trust to reach the test HTTPS server.
func CAPool(t testing.TB) *x509.CertPool {
	t.Helper()
	prepare(t)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(built.ca) {
		t.Fatal("podmantest: the test CA does not parse")
	}
	return pool
}

// Image returns the id of the tool image on the service at socket, built
// and imported once per process: the static toolkit, the installed
// busybox, and the host's CA bundle with the test CA added.
func Image(t testing.TB, socket string) string {
	t.Helper()
	prepare(t)
	if id, ok := built.images.Load(socket); ok {
		return id.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := image.Build(ctx, image.Options{Socket: socket, Inputs: Inputs(t)})
	if err != nil {
		t.Fatalf("podmantest: building the tool image: %v", err)
	}
	built.images.Store(socket, b.ID)
	return b.ID
}

// Inputs are the files Image builds the tool image from: what a test's
// [podman] ImageInputs names for image = "auto".
func Inputs(t testing.TB) image.Inputs {
	t.Helper()
	prepare(t)
	return image.Inputs{Toolkit: built.toolkit, CABundle: built.bundle}
}

func prepare(t testing.TB) {
	t.Helper()
	built.once.Do(func() { built.err = build() })
	if built.err != nil {
		t.Fatalf("podmantest: %v", built.err)
	}
}

func build() error {
	dir, err := os.MkdirTemp("", "bxtk-")
	if err != nil {
		return err
	}
	built.dir = dir
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	built.toolkit = filepath.Join(dir, "boxmaker")
	cmd := exec.Command("go", "build", "-tags", BuildTags, "-o", built.toolkit, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building a static boxmaker: %v\n%s", err, out)
	}
	caPEM, server, err := testCA()
	if err != nil {
		return err
	}
	built.server, built.ca = server, caPEM
	host, err := os.ReadFile(image.DefaultCABundle)
	if err != nil {
		return fmt.Errorf("the host's CA bundle (install ca-certificates): %w", err)
	}
	built.bundle = filepath.Join(dir, "ca-certificates.crt")
	return os.WriteFile(built.bundle, append(append(host, '\n'), caPEM...), 0o644)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the boxmaker module")
	}
	return filepath.Dir(mod), nil
}

// testCA makes a CA and a server certificate for TestDomain and
// *.TestDomain signed by it.
func testCA() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "boxmaker test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: TestDomain},
		DNSNames: []string{TestDomain, "*." + TestDomain}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	var caPEM bytes.Buffer
	pem.Encode(&caPEM, &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM.Bytes(), tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}, nil
}
