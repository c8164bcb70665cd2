package egress_test

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// strictParse reads raw, the bytes one connection carried to a host, as
// the strictest reading of RFC 9112 would: CRLF line ends only, no
// obs-fold, header names of token characters, one Host, at most one
// framing header (a single Content-Length of digits, or Transfer-Encoding
// exactly "chunked"), chunk sizes of hex digits with no extension and no
// trailer. It returns the requests it read and the bytes left after the
// last whole one (a request cut short, or anything it refuses, with why).
// Where the naive host and this agree on every request, the bytes have one
// reading: no host can find a request in them that the proxy did not send.
func strictParse(raw []byte) (reqs []naiveRequest, rest []byte, err error) {
	for len(raw) > 0 {
		req, n, err := strictOne(raw)
		if err != nil {
			return reqs, raw, err
		}
		reqs, raw = append(reqs, req), raw[n:]
	}
	return reqs, nil, nil
}

var errCut = errors.New("cut short")

func strictOne(raw []byte) (naiveRequest, int, error) {
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		return naiveRequest{}, 0, errCut
	}
	head := string(raw[:end])
	if strings.ContainsAny(strings.ReplaceAll(head, "\r\n", ""), "\r\n") {
		return naiveRequest{}, 0, errors.New("a bare CR or LF in the header block")
	}
	lines := strings.Split(head, "\r\n")
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 || parts[2] != "HTTP/1.1" || parts[0] == "" || parts[1] == "" {
		return naiveRequest{}, 0, fmt.Errorf("request line %q", lines[0])
	}
	req := naiveRequest{method: parts[0], target: parts[1], header: map[string][]string{}}
	for _, l := range lines[1:] {
		name, v, ok := strings.Cut(l, ": ")
		if !ok || name == "" || strings.Trim(name, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" ||
			v != strings.TrimSpace(v) {
			return naiveRequest{}, 0, fmt.Errorf("header line %q", l)
		}
		lower := strings.ToLower(name)
		req.header[lower] = append(req.header[lower], v)
	}
	if hs := req.header["host"]; len(hs) != 1 {
		return naiveRequest{}, 0, fmt.Errorf("%d Host headers", len(hs))
	} else {
		req.host = hs[0]
	}
	cl, te := req.header["content-length"], req.header["transfer-encoding"]
	n := end + 4
	switch {
	case len(cl) > 0 && len(te) > 0:
		return naiveRequest{}, 0, errors.New("both Content-Length and Transfer-Encoding")
	case len(te) > 0:
		if len(te) != 1 || te[0] != "chunked" {
			return naiveRequest{}, 0, fmt.Errorf("Transfer-Encoding %q", te)
		}
		var body bytes.Buffer
		for {
			i := bytes.Index(raw[n:], []byte("\r\n"))
			if i < 0 {
				return naiveRequest{}, 0, errCut
			}
			size, err := strconv.ParseUint(string(raw[n:n+i]), 16, 31)
			if err != nil || strings.ContainsAny(string(raw[n:n+i]), "+-_ ") {
				return naiveRequest{}, 0, fmt.Errorf("chunk size %q", raw[n:n+i])
			}
			n += i + 2
			if size == 0 {
				if !bytes.HasPrefix(raw[n:], []byte("\r\n")) {
					return naiveRequest{}, 0, errors.New("a trailer")
				}
				n += 2
				break
			}
			if len(raw) < n+int(size)+2 {
				return naiveRequest{}, 0, errCut
			}
			if string(raw[n+int(size):n+int(size)+2]) != "\r\n" {
				return naiveRequest{}, 0, errors.New("chunk data not ended by CRLF")
			}
			body.Write(raw[n : n+int(size)])
			n += int(size) + 2
		}
		req.body = body.String()
	case len(cl) > 0:
		size, err := strconv.ParseUint(cl[0], 10, 31)
		if len(cl) != 1 || err != nil || strings.TrimLeft(cl[0], "0123456789") != "" {
			return naiveRequest{}, 0, fmt.Errorf("Content-Length %q", cl)
		}
		if len(raw) < n+int(size) {
			return naiveRequest{}, 0, errCut
		}
		req.body = string(raw[n : n+int(size)])
		n += int(size)
	}
	return req, n, nil
}
