package podman

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	spec "github.com/opencontainers/runtime-spec/specs-go"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/egress"
	"boxmaker/roles/brokerd/internal/redact"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// A grant may hand its tool one secret (issue 15). The decision and the
// RunSpec carry only the secret's name; the runtime reads the value here,
// at run time, and it lives only for the call: in brokerd's memory, in the
// egress proxy (http_fetch) or on a tmpfs of the call's own container
// (shell, secret_deliver = "file"), never in Podman's configuration of the
// container, its environment, a log line or an error.

// SetSecrets sets how the runtime reads a secret's value by name:
// brokerd's secrets directory (policy.ReadSecret, whose errors name the
// secret and never the value). Without it, a call whose grant names a
// secret fails, having run nothing.
func (r *Runtime) SetSecrets(read func(name string) ([]byte, error)) { r.secrets.Store(&read) }

// Paths in the container for a call with a secret.
const (
	// caPath is the egress proxy's per-call CA certificate (http_fetch).
	caPath = "/run/boxmaker/ca.pem"
	// secretTmpfsBytes sizes the secret's own tmpfs: twice the largest
	// secret brokerd reads.
	secretTmpfsBytes = 2 * policy.MaxSecretBytes
)

// callSecret is one call's secret, from reading it to the call's end.
type callSecret struct {
	use         policy.SecretUse
	value       []byte
	placeholder string
	redactor    *redact.Redactor
}

// String, GoString and Format keep the value and the placeholder out of
// every fmt verb.
func (c *callSecret) String() string                { return "secret " + c.use.Name }
func (c *callSecret) GoString() string              { return c.String() }
func (c *callSecret) Format(f fmt.State, verb rune) { fmt.Fprint(f, c.String()) }

// readSecret reads the secret s names, if any; nil when it names none.
func (r *Runtime) readSecret(s *runner.RunSpec) (*callSecret, error) {
	use, ok := s.Secret()
	if !ok {
		return nil, nil
	}
	reader := r.secrets.Load()
	if reader == nil {
		return nil, runner.Failed(fmt.Sprintf("the secret %q cannot be read: brokerd has no secrets directory; %s", use.Name, runbook.See("secret-unavailable")))
	}
	value, err := (*reader)(use.Name)
	if err != nil {
		// The store's errors name the secret and the problem, never the
		// value.
		return nil, runner.Failed(err.Error())
	}
	return &callSecret{use: use, value: value, placeholder: newPlaceholder(), redactor: redact.New(use.Name, value)}, nil
}

// close forgets the value. Go may have copied it (the proxy's request
// bytes, the request line); this clears what the runtime holds.
func (c *callSecret) close() {
	if c != nil {
		clear(c.value)
	}
}

// newPlaceholder is a random string that stands for the value in the
// container: meaningless anywhere the proxy does not replace it.
func newPlaceholder() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "boxmaker-secret-" + hex.EncodeToString(b[:])
}

// proxySecret is what the call's egress proxy puts into requests.
func (c *callSecret) proxySecret() *egress.Secret {
	if c == nil || c.use.File {
		return nil
	}
	return &egress.Secret{Name: c.use.Name, Header: c.use.Header, Placeholder: c.placeholder, Value: c.value, Hosts: c.use.Hosts}
}

// addTo puts the secret's part into the toolkit request: the header with
// the placeholder and the proxy's CA (http_fetch), or the file (shell).
func (c *callSecret) addTo(req *wire.ToolkitRequest) {
	if c == nil {
		return
	}
	if c.use.File {
		req.Secret = &wire.ToolkitSecret{Path: path.Join(wire.ToolkitSecretDir, c.use.Name), Value: c.value}
		return
	}
	ca := caPath
	req.Header = &wire.ToolkitHeader{Name: c.use.Header, Value: strings.Replace(c.use.Format, "{}", c.placeholder, 1)}
	req.CA = &ca
}

// redactText replaces the value, in every form redact knows, in text that
// leaves brokerd.
func (c *callSecret) redactText(s string) string {
	if c == nil {
		return s
	}
	return c.redactor.String(s)
}

// secretMounts are the container's mounts for a call's secret: the
// proxy's CA, read-only, or the secret's own tmpfs, the tool user's alone.
func secretMounts(c container) []spec.Mount {
	var ms []spec.Mount
	if c.ca != "" {
		ms = append(ms, spec.Mount{Destination: caPath, Type: "bind", Source: c.ca,
			Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
	}
	if c.secretFile {
		// "U": Podman makes the tmpfs the container user's (it refuses
		// the kernel's own uid= and gid= options).
		ms = append(ms, spec.Mount{Destination: wire.ToolkitSecretDir, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"rw", "nosuid", "nodev", "noexec", fmt.Sprintf("size=%d", secretTmpfsBytes), "mode=0700", "U"}})
	}
	return ms
}
