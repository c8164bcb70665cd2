package toolkit

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// Results are text for the model. Bytes that are not UTF-8 text (a NUL, or
// an invalid sequence) are never passed through: the model gets a line
// saying what was withheld and how big it was.

// capture keeps the first max bytes written to it and counts the rest, so
// a writer is never blocked and memory stays bounded.
type capture struct {
	max   int64
	buf   bytes.Buffer
	total int64
}

func (c *capture) Write(p []byte) (int, error) {
	if room := c.max - int64(c.buf.Len()); room > 0 {
		c.buf.Write(p[:min(int64(len(p)), room)])
	}
	c.total += int64(len(p))
	return len(p), nil
}

// readCapped reads r to the end, keeping at most max bytes.
func readCapped(r io.Reader, max int64) (*capture, error) {
	c := &capture{max: max}
	_, err := io.Copy(c, r)
	return c, err
}

// text says what the captured bytes are for the model: the text itself,
// cut to a whole character if it was truncated, or, for anything that is
// not text, what (a "file", "output" or "content") and how many bytes.
func (c *capture) text(what string) (string, bool) {
	b := c.buf.Bytes()
	truncated := c.total > int64(len(b))
	if truncated {
		b = trimPartialRune(b)
	}
	if !isText(b) {
		return fmt.Sprintf("binary %s, %d bytes, not shown", what, c.total), false
	}
	return string(b), truncated
}

// isText reports whether b is valid UTF-8 without NUL bytes.
func isText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, left
// there by a cut at a byte count. A sequence that is invalid rather than
// incomplete is kept, so that isText still sees it.
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		start := len(b) - i
		if !utf8.RuneStart(b[start]) {
			continue
		}
		if !utf8.FullRune(b[start:]) {
			return b[:start]
		}
		break
	}
	return b
}
