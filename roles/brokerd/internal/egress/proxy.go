// Package egress is http_fetch's only way out of its container: a SOCKS5
// proxy on a Unix socket, one per call, mounted into that call's container
// alone (the container has no network at all). It allows exactly the host
// patterns of the call's grant, on port 443, resolves names itself, and
// dials only addresses that reach the public internet, by address, so a
// name that changes its answer between check and dial (DNS rebinding)
// cannot slip through. With a call's secret (StartWith), the proxy ends
// the tool's TLS to the hosts that get it and puts the value into their
// requests itself (mitm.go); every other host gets a blind relay.
package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"boxmaker/runbook"
)

// SocketName is the socket's name inside the proxy's own directory.
const SocketName = "egress.sock"

// Timeouts for one connection: the SOCKS5 exchange, and each dial.
const (
	handshakeTimeout = 10 * time.Second
	dialTimeout      = 10 * time.Second
)

// maxRefusals bounds the refusals a Proxy remembers for its call.
const maxRefusals = 16

// maxConns bounds the tool's connections open at once, each of which
// holds a goroutine, a connection to a host and, on the secret's path,
// two TLS states in brokerd: a tool that opens connection after
// connection and never finishes them (slowloris) holds no more than this.
// http_fetch needs one at a time.
const maxConns = 64

// Proxy is one call's egress proxy. Start it, mount Path into the call's
// container, and Close it when the call ends, whatever happened.
type Proxy struct {
	hosts []string
	dir   string
	ln    net.Listener
	ctx   context.Context // cancelled by Close: ends dials and lookups
	stop  context.CancelFunc

	// With a secret (StartWith): the hosts that get it have their TLS
	// terminated (mitm.go) with certificates from ca, whose certificate
	// alone is in caPath; upSessions resumes the proxy's own TLS to them.
	// Without one, all four are zero.
	secret     *secret
	ca         *ca
	caPath     string
	upSessions tls.ClientSessionCache

	// wg counts the accept loop and every connection's goroutine; Close
	// waits for all of them, so the Proxy owns every goroutine it starts.
	wg sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	refusals []string
	closed   bool
	clients  int  // the tool's connections open now (admit)
	tooMany  bool // the refusal for maxConns is recorded once
}

// Start listens on a new socket in a new directory under parent (the
// system's temporary directory when parent is ""), allowing hosts: the
// matched grant's host patterns, already checked by policy.
func Start(parent string, hosts []string) (*Proxy, error) { return StartWith(parent, hosts, nil) }

// StartWith is Start with a secret (nil: exactly Start). It makes the
// call's CA, keeps its key in memory only, and writes its certificate to
// CAPath.
func StartWith(parent string, hosts []string, secret *Secret) (*Proxy, error) {
	if len(hosts) == 0 {
		return nil, errors.New("egress: no hosts to allow")
	}
	p := &Proxy{hosts: slices.Clone(hosts), conns: map[net.Conn]struct{}{}}
	if secret != nil {
		s, err := newSecret(secret, hosts)
		if err != nil {
			return nil, err
		}
		if p.ca, err = newCA(s.hosts, time.Now()); err != nil {
			return nil, err
		}
		p.secret = s
		p.upSessions = tls.NewLRUClientSessionCache(len(s.hosts) * 4)
	}
	dir, err := os.MkdirTemp(parent, "boxmaker-egress-")
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	p.dir = dir
	if p.ca != nil {
		// Only the certificate: world-readable, since it is mounted for
		// the container's user, whoever that is.
		p.caPath = filepath.Join(dir, CAFile)
		if err := writeFile(p.caPath, p.ca.pem(), 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("egress: %w", err)
		}
	}
	path := filepath.Join(dir, SocketName)
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress: %w", err)
	}
	// The directory (0700) keeps everyone on the host out. The socket
	// itself must accept the container's user, whoever that is: only this
	// call's container has it mounted.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress: %w", err)
	}
	p.ln = ln
	p.ctx, p.stop = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// writeFile creates name with exactly mode, whatever the umask. No fsync:
// the container's bind mount reads the same page cache, and the file is
// gone when the call ends.
func writeFile(name string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	return errors.Join(err, f.Close())
}

// Path is the socket on the host, to be mounted into the container.
func (p *Proxy) Path() string { return filepath.Join(p.dir, SocketName) }

// CAPath is the per-call CA's certificate (PEM), a file in the proxy's own
// directory (mode 0644), to be bind-mounted read-only into the call's
// container; "" without a secret.
func (p *Proxy) CAPath() string { return p.caPath }

// String, GoString and Format name the proxy by its socket: nothing of the
// secret it holds is printed, whatever the verb.
func (p *Proxy) String() string { return "egress proxy " + p.Path() }

// GoString is String.
func (p *Proxy) GoString() string { return p.String() }

// Format prints String for every verb.
func (p *Proxy) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }

// Refusals says what the proxy refused during the call and why, oldest
// first, so that a failed http_fetch can tell the model more than SOCKS5's
// one-byte reply codes can.
func (p *Proxy) Refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refusals)
}

// Close stops listening, cuts every open connection, waits for every
// goroutine of the proxy to end and removes the socket's directory.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.stop()
	err := p.ln.Close()
	p.wg.Wait()
	if p.secret != nil {
		// The proxy's copy; nothing reads it any more. Its text forms are
		// strings, which Go cannot clear: they are dropped for the
		// collector.
		clear(p.secret.value)
		p.secret.text, p.secret.lowerText = "", ""
	}
	return errors.Join(err, os.RemoveAll(p.dir))
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed; Close reports
		}
		if !p.admit() {
			c.Close()
			continue
		}
		if !p.track(c) {
			p.leave()
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.leave()
			defer p.untrack(c)
			p.serve(c)
		}()
	}
}

// admit counts a new connection of the tool's in, or refuses it when
// maxConns are open already; the first refusal is recorded.
func (p *Proxy) admit() bool {
	p.mu.Lock()
	ok := p.clients < maxConns
	if ok {
		p.clients++
	}
	first := !ok && !p.tooMany
	p.tooMany = p.tooMany || !ok
	p.mu.Unlock()
	if first {
		p.refuse("more than %d connections at once from the tool; %s", maxConns, runbook.See("egress-too-many-connections"))
	}
	return ok
}

// leave counts a connection of the tool's out.
func (p *Proxy) leave() {
	p.mu.Lock()
	p.clients--
	p.mu.Unlock()
}

// track registers c so that Close can cut it; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// refuse records why something was refused, and returns the text. A text
// that quotes what a host sent has any occurrence of the value replaced by
// the secret's name.
func (p *Proxy) refuse(format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	if p.secret != nil {
		msg = p.secret.scrub(msg)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.refusals) < maxRefusals {
		p.refusals = append(p.refusals, msg)
	}
	return msg
}
