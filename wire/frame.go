package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the largest frame body, in bytes.
const MaxFrame = 1 << 20

// Frame errors. A reader that returns one of these has not read or
// allocated the body; the caller closes the connection.
var (
	ErrEmptyFrame    = errors.New("wire: frame length is zero")
	ErrFrameTooLarge = errors.New("wire: frame length exceeds MaxFrame")
)

// ReadFrame reads one length-prefixed frame body. It returns io.EOF only when
// the stream ends cleanly before a frame starts; a stream that ends inside a
// frame gives io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, ErrEmptyFrame
	}
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, MaxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// WriteFrame writes body with its length prefix in one Write call.
func WriteFrame(w io.Writer, body []byte) error {
	if len(body) == 0 {
		return ErrEmptyFrame
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, len(body), MaxFrame)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err := w.Write(buf)
	return err
}

// ReadEnvelope reads and decodes one frame.
func ReadEnvelope(r io.Reader) (Envelope, error) {
	body, err := ReadFrame(r)
	if err != nil {
		return Envelope{}, err
	}
	return UnmarshalEnvelope(body)
}

// WriteEnvelope encodes e and writes it as one frame.
func WriteEnvelope(w io.Writer, e Envelope) error {
	body, err := MarshalEnvelope(e)
	if err != nil {
		return err
	}
	return WriteFrame(w, body)
}

// ErrNotFinal is returned by ReadRequest for a request frame without final: true.
var ErrNotFinal = errors.New("wire: a request must be a single frame with final: true")

// ReadRequest reads a request: one envelope, version 1, with final set.
func ReadRequest(r io.Reader) (Envelope, error) {
	e, err := ReadEnvelope(r)
	if err != nil {
		return e, err
	}
	if !e.Final {
		return e, ErrNotFinal
	}
	return e, nil
}

// Reply builds a response frame's envelope for request id.
func Reply(id uint64, final bool, msg Message) Envelope {
	return Envelope{V: Version, ID: id, Final: final, Msg: msg}
}

// Request builds a request envelope: version 1, final.
func Request(id uint64, msg Message) Envelope {
	return Envelope{V: Version, ID: id, Final: true, Msg: msg}
}

// ErrorCodeFor says which error code answers a failure to read a request,
// so every server replies the same way.
func ErrorCodeFor(err error) ErrorCode {
	var ve *VersionError
	var de *DecodeError
	switch {
	case errors.As(err, &ve):
		return BadVersion
	case errors.As(err, &de), errors.Is(err, ErrNotFinal):
		return BadMessage
	default:
		return BadFrame
	}
}
