// Package egress is http_fetch's only way out of its container: a SOCKS5
// proxy on a Unix socket, one per call, mounted into that call's container
// alone (the container has no network at all). It allows exactly the host
// patterns of the call's grant, on port 443, resolves names itself, and
// dials only addresses that reach the public internet, by address, so a
// name that changes its answer between check and dial (DNS rebinding)
// cannot slip through.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
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

// Proxy is one call's egress proxy. Start it, mount Path into the call's
// container, and Close it when the call ends, whatever happened.
type Proxy struct {
	hosts []string
	dir   string
	ln    net.Listener
	ctx   context.Context // cancelled by Close: ends dials and lookups
	stop  context.CancelFunc

	// wg counts the accept loop and every connection's goroutine; Close
	// waits for all of them, so the Proxy owns every goroutine it starts.
	wg sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	refusals []string
	closed   bool
}

// Start listens on a new socket in a new directory under parent (the
// system's temporary directory when parent is ""), allowing hosts: the
// matched grant's host patterns, already checked by policy.
func Start(parent string, hosts []string) (*Proxy, error) {
	if len(hosts) == 0 {
		return nil, errors.New("egress: no hosts to allow")
	}
	dir, err := os.MkdirTemp(parent, "boxmaker-egress-")
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
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
	ctx, stop := context.WithCancel(context.Background())
	p := &Proxy{hosts: slices.Clone(hosts), dir: dir, ln: ln, ctx: ctx, stop: stop, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Path is the socket on the host, to be mounted into the container.
func (p *Proxy) Path() string { return filepath.Join(p.dir, SocketName) }

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
	return errors.Join(err, os.RemoveAll(p.dir))
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed; Close reports
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.serve(c)
		}()
	}
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

func (p *Proxy) refuse(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.refusals) < maxRefusals {
		p.refusals = append(p.refusals, fmt.Sprintf(format, args...))
	}
}
