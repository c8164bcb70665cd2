package egress_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The scaffolding of issue 29's class 2 tests: a host that gets the secret
// and echoes what the tool asks it to, and a client that plays the
// attacker in the container, looking at the proxy's answer byte for byte.

// echoHost is a secret host that echoes the query's g: on /stream in one
// write of its own, then the rest of the body in a second (a host that
// streams); on /once the whole body, which ends with g, in one write with
// a Content-Length (a host that writes once); on /lines g, then, once the test says so
// (release), a last line. Its answers carry nothing that changes between
// requests (no Date), so that two answers differ only where the proxy made
// them differ.
type echoHost struct {
	addr    netip.AddrPort
	release chan struct{}
	wg      sync.WaitGroup
}

const echoPrefix, echoRest = "you asked for ", " and that is all\n"

func startEchoHost(t testing.TB, cert tls.Certificate) *echoHost {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &echoHost{addr: netip.MustParseAddrPort(ln.Addr().String()), release: make(chan struct{}, 1)}
	acceptAll(t, ln, &h.wg, h.serve)
	return h
}

func (h *echoHost) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		g := req.URL.Query().Get("g")
		const head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		var err2 error
		switch req.URL.Path {
		case "/stream":
			if _, err2 = io.WriteString(c, head+"Transfer-Encoding: chunked\r\n\r\n"+chunk(echoPrefix+g)); err2 == nil {
				_, err2 = io.WriteString(c, chunk(echoRest)+"0\r\n\r\n")
			}
		case "/once":
			// The guess ends the body, and so the proxy's last read of it.
			body := echoPrefix + g
			_, err2 = io.WriteString(c, head+"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		case "/lines":
			if _, err2 = io.WriteString(c, head+"Transfer-Encoding: chunked\r\n\r\n"+chunk(g)); err2 == nil {
				select {
				case <-h.release:
				case <-time.After(10 * time.Second):
				}
				_, err2 = io.WriteString(c, chunk("last line\n")+"0\r\n\r\n")
			}
		default:
			_, err2 = io.WriteString(c, head+"Content-Length: 2\r\n\r\nok")
		}
		if err2 != nil {
			return
		}
	}
}

// seen is everything a client in the container can see of one answer:
// the header block as sent, the size of every chunk the proxy wrote and
// of every read the client's TLS made, the body's length, any error, and
// whether the connection carried the next request (a ping after it).
type seen struct {
	head   string
	chunks []int
	reads  []int
	length int
	err    string
	kept   bool
}

func (s seen) String() string {
	return fmt.Sprintf("head %q chunks %v reads %v length %d err %q kept %v", s.head, s.chunks, s.reads, s.length, s.err, s.kept)
}

func (s seen) equal(o seen) bool { return s.String() == o.String() }

// readLog is a reader that notes the size of every read.
type readLog struct {
	r     io.Reader
	sizes []int
}

func (l *readLog) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.sizes = append(l.sizes, n)
	}
	return n, err
}

// attacker is a tool's connection to the secret host through the proxy,
// over the call's CA, read by hand so that nothing of the framing is lost.
type attacker struct {
	t   testing.TB
	c   *tls.Conn
	log *readLog
	br  *bufio.Reader
}

func (r *rig) attacker(t testing.TB) *attacker {
	t.Helper()
	raw, err := dialSOCKS(context.Background(), r.proxy.Path(), "secret.boxmaker.test")
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{ServerName: "secret.boxmaker.test", RootCAs: r.trust, NextProtos: []string{"http/1.1"}})
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute))
	log := &readLog{r: c}
	// A buffer far larger than a TLS record: each read is one record.
	return &attacker{t: t, c: c, log: log, br: bufio.NewReaderSize(log, 1<<17)}
}

// ask sends GET path?g=guess with the placeholder in the secret's header,
// and what it sees of the answer; then a ping, to see whether the
// connection is kept.
func (a *attacker) ask(path, guess string) seen {
	s := a.get(path, guess)
	if s.err == "" {
		p := a.get("/ping", "")
		s.kept = p.err == "" && p.head != "" && !strings.Contains(p.head, "Connection: close")
	}
	return s
}

func (a *attacker) get(path, guess string) seen {
	a.log.sizes = nil
	req := "GET " + path + "?g=" + url.QueryEscape(guess) + " HTTP/1.1\r\nHost: secret.boxmaker.test\r\nAuthorization: Bearer " + placeholder + "\r\n\r\n"
	var s seen
	if _, err := io.WriteString(a.c, req); err != nil {
		s.err = err.Error()
		return s
	}
	var head bytes.Buffer
	err := a.readBody(&head, &s)
	s.head = head.String()
	s.reads = a.log.sizes
	if err != nil {
		s.err = err.Error()
	}
	return s
}

// sendLines asks /lines?g=text and reads the answer's header block.
func (a *attacker) sendLines(text string) error {
	req := "GET /lines?g=" + url.QueryEscape(text) + " HTTP/1.1\r\nHost: secret.boxmaker.test\r\n\r\n"
	if _, err := io.WriteString(a.c, req); err != nil {
		return err
	}
	var head bytes.Buffer
	if _, chunked, err := a.readHead(&head); err != nil || !chunked {
		return fmt.Errorf("the answer's head %q: %v", head.String(), err)
	}
	return nil
}

// readBody reads an answer's header block into head and its body into
// s.
func (a *attacker) readBody(head *bytes.Buffer, s *seen) error {
	length, chunked, err := a.readHead(head)
	if err != nil {
		return err
	}
	if !chunked {
		if length < 0 {
			return errors.New("no framing")
		}
		n, err := io.CopyN(io.Discard, a.br, int64(length))
		s.length = int(n)
		return err
	}
	for {
		data, err := a.readChunk()
		if err != nil || data == nil {
			return err
		}
		s.chunks = append(s.chunks, len(data))
		s.length += len(data)
	}
}

// readHead reads a header block into head, and says how the body is
// framed.
func (a *attacker) readHead(head *bytes.Buffer) (length int, chunked bool, err error) {
	length = -1
	for {
		line, err := a.br.ReadString('\n')
		if err != nil {
			return 0, false, err
		}
		head.WriteString(line)
		if line == "\r\n" {
			return length, chunked, nil
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		chunked = chunked || line == "Transfer-Encoding: chunked\r\n"
	}
}

// readChunk reads one chunk of a chunked body: nil after the last.
func (a *attacker) readChunk() ([]byte, error) {
	line, err := a.br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(line, "\r\n"), 16, 32)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("a chunk size %q", line)
	}
	if n == 0 {
		_, err := a.br.Discard(2)
		return nil, err
	}
	data := make([]byte, n+2)
	if _, err := io.ReadFull(a.br, data); err != nil {
		return nil, err
	}
	return data[:n], nil
}
