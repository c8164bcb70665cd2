package toolkit

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"boxmaker/wire"
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

// text is the captured bytes as content for the model, cut to a whole
// character if more came than were kept; or, for anything that is not
// text, no content and a note saying what (a "file", "output" or
// "content") was withheld and how many bytes it had. Whether the content
// was cut is brokerd's to say: it asks for more than it passes on.
func (c *capture) text(what string) (content, note string) {
	b := c.buf.Bytes()
	if c.total > int64(len(b)) {
		b = trimPartialRune(b)
	}
	if !isText(b) {
		return "", fmt.Sprintf("binary %s, %d bytes, not shown", what, c.total)
	}
	return string(b), ""
}

// clip makes a note or a failure's message what brokerd takes: UTF-8
// without NUL (a message can quote what a server sent, a certificate's
// name say), and at most wire.ToolkitNoteBytes, cut at a character.
// Messages quote paths and URLs, and a server's redirect can make a URL as
// long as it likes.
func clip(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= wire.ToolkitNoteBytes {
		return s
	}
	const more = " [cut]"
	return string(trimPartialRune([]byte(s[:wire.ToolkitNoteBytes-len(more)]))) + more
}

// joinNotes puts notes on lines of their own, skipping empty ones.
func joinNotes(notes ...string) string {
	var b strings.Builder
	for _, n := range notes {
		if n == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(n)
	}
	return b.String()
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
