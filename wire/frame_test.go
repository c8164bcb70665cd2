package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"boxmaker/wire"
)

// countingReader fails the test if more than limit bytes are read: a frame
// reader must refuse a bad length before touching the body.
type countingReader struct {
	r     io.Reader
	n     int
	limit int
	t     *testing.T
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if c.n > c.limit {
		c.t.Fatalf("read %d bytes; the body of a refused frame must not be read", c.n)
	}
	return n, err
}

func header(n uint32) []byte {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], n)
	return h[:]
}

func TestReadFrameRefusesBadLengthsBeforeTheBody(t *testing.T) {
	for _, tc := range []struct {
		n    uint32
		want error
	}{
		{0, wire.ErrEmptyFrame},
		{wire.MaxFrame + 1, wire.ErrFrameTooLarge},
		{0xffffffff, wire.ErrFrameTooLarge},
	} {
		// A body follows, but it must not be read.
		in := append(header(tc.n), bytes.Repeat([]byte("x"), 64)...)
		r := &countingReader{r: bytes.NewReader(in), limit: 4, t: t}
		if _, err := wire.ReadFrame(r); !errors.Is(err, tc.want) {
			t.Errorf("length %d: err %v, want %v", tc.n, err, tc.want)
		}
	}
}

func TestReadFrameEnds(t *testing.T) {
	if _, err := wire.ReadFrame(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	if _, err := wire.ReadFrame(bytes.NewReader([]byte{0, 0})); err != io.ErrUnexpectedEOF {
		t.Errorf("half a header: %v, want io.ErrUnexpectedEOF", err)
	}
	short := append(header(10), "abc"...)
	if _, err := wire.ReadFrame(bytes.NewReader(short)); err != io.ErrUnexpectedEOF {
		t.Errorf("truncated body: %v, want io.ErrUnexpectedEOF", err)
	}
	full := append(header(wire.MaxFrame), make([]byte, wire.MaxFrame)...)
	if b, err := wire.ReadFrame(bytes.NewReader(full)); err != nil || len(b) != wire.MaxFrame {
		t.Errorf("a frame of exactly MaxFrame: %d bytes, %v", len(b), err)
	}
}

func TestWriteFrame(t *testing.T) {
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), append(header(5), "hello"...)) {
		t.Fatalf("frame bytes % x", buf.Bytes())
	}
	if err := wire.WriteFrame(&buf, nil); !errors.Is(err, wire.ErrEmptyFrame) {
		t.Errorf("empty body: %v", err)
	}
	if err := wire.WriteFrame(&buf, make([]byte, wire.MaxFrame+1)); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("oversized body: %v", err)
	}
}

func TestEnvelopeStreamAndRequests(t *testing.T) {
	sid, _ := wire.NewSessionID("chat-1")
	req := wire.Request(7, wire.ToolRequest{Session: sid, Call: 3, Tool: "read_file", Arguments: `{"path":"/a"}`})
	var buf bytes.Buffer
	if err := wire.WriteEnvelope(&buf, req); err != nil {
		t.Fatal(err)
	}
	pending := wire.Reply(7, false, wire.PendingResponse{Approval: 41, Expires: 1})
	if err := wire.WriteEnvelope(&buf, pending); err != nil {
		t.Fatal(err)
	}
	got, err := wire.ReadRequest(&buf)
	if err != nil || got.ID != 7 || got.Msg.Kind() != wire.KindToolRequest {
		t.Fatalf("ReadRequest: %+v %v", got, err)
	}
	// A frame without final: true is not a request.
	if _, err := wire.ReadRequest(&buf); !errors.Is(err, wire.ErrNotFinal) {
		t.Fatalf("non-final request: %v", err)
	}
	if c := wire.ErrorCodeFor(wire.ErrNotFinal); c != wire.BadMessage {
		t.Errorf("ErrorCodeFor(ErrNotFinal) = %v", c)
	}
	if c := wire.ErrorCodeFor(wire.ErrFrameTooLarge); c != wire.BadFrame {
		t.Errorf("ErrorCodeFor(ErrFrameTooLarge) = %v", c)
	}
}

func TestBadVersionCarriesTheID(t *testing.T) {
	_, err := wire.UnmarshalEnvelope([]byte(`{"v":2,"id":9,"final":true,"msg":{"kind":"future","body":{}}}`))
	var ve *wire.VersionError
	if !errors.As(err, &ve) || ve.V != 2 || ve.ID != 9 {
		t.Fatalf("err %v, want a VersionError for v 2, id 9", err)
	}
	if wire.ErrorCodeFor(err) != wire.BadVersion {
		t.Fatalf("ErrorCodeFor = %v, want bad_version", wire.ErrorCodeFor(err))
	}
}
