package podman

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"boxmaker/wire"
)

// brokerd checks every answer itself: the toolkit runs next to the tool's
// own processes, so what it says is believed only as far as brokerd can
// check it (docs/decisions.md, "The toolkit's answer channel").

// request is a toolkit request line and the cap on the content brokerd
// passes on from its answer.
type request struct {
	line []byte
	cap  int64
}

// askFor is what brokerd asks the toolkit for, for a cap of cap bytes:
// utf8.UTFMax more, so that content cut inside a character still comes
// back longer than the cap, and brokerd sees for itself that there was
// more.
func askFor(cap int64) int64 { return cap + utf8.UTFMax }

// answerLimit is the most bytes an answer line to req can take: every
// byte of the content and notes escaped (JSON escaping at most sextuples
// text, "\u0001" for one byte), and the members' names.
func (req request) answerLimit() int {
	return int(6*(askFor(req.cap)+2*wire.ToolkitNoteBytes)) + 1024
}

// answer is a toolkit answer that brokerd has checked and put together:
// what the call gives back.
type answer struct {
	Status    string // "result" or "failed"
	Text      string // the content with its notes, or the failure's message
	Truncated bool   // the content was longer than the cap, by brokerd's count
}

// errNoAnswer is a toolkit that ended without a whole answer line.
var errNoAnswer = errors.New("no answer")

// errBadAnswer wraps an answer that breaks the protocol's rules: a
// toolkit that is not the one brokerd ships, or one that something in the
// container got to.
var errBadAnswer = errors.New("the toolkit's answer broke the protocol")

// parseAnswer reads the toolkit's one answer line and checks it against
// req: a whole line and nothing after it, strict JSON, a known status,
// every member valid UTF-8 with no NUL, the content at most what was asked
// for and each note or failure message at most wire.ToolkitNoteBytes.
// Other control characters (ESC among them) are content a command may
// print; they stay, and whatever shows text to the owner escapes them
// (wire.Printable). Content longer than the cap is cut, at a character, by
// brokerd, which then marks the result truncated.
func parseAnswer(out []byte, req request) (answer, error) {
	line, rest, ok := bytes.Cut(out, []byte("\n"))
	if !ok || len(line) == 0 {
		return answer{}, errNoAnswer
	}
	if len(rest) > 0 {
		return answer{}, fmt.Errorf("%w: %d bytes after the answer line", errBadAnswer, len(rest))
	}
	var r toolkitResponse
	if err := wire.Unmarshal(line, &r); err != nil {
		// The kind, not the parser's text: that quotes member names, and
		// the line is the container's bytes, which for a call with a
		// secret may hold it in a form redaction does not know (a JSON
		// pointer writes '/' as "~1"). run prints this to brokerd's log.
		kind := "not JSON"
		if de := (*wire.DecodeError)(nil); errors.As(err, &de) {
			kind = de.Kind.String()
		}
		return answer{}, fmt.Errorf("%w: it does not parse (%s)", errBadAnswer, kind)
	}
	for _, m := range []struct{ name, s string }{{"head", r.Head}, {"text", r.Text}, {"tail", r.Tail}} {
		switch {
		case !utf8.ValidString(m.s):
			return answer{}, fmt.Errorf("%w: its %s is not UTF-8", errBadAnswer, m.name)
		case strings.IndexByte(m.s, 0) >= 0:
			return answer{}, fmt.Errorf("%w: its %s holds a NUL byte", errBadAnswer, m.name)
		}
	}
	switch r.Status {
	case "failed":
		if r.Head != "" || r.Tail != "" {
			return answer{}, fmt.Errorf("%w: a failure with notes", errBadAnswer)
		}
		if len(r.Text) > wire.ToolkitNoteBytes {
			return answer{}, fmt.Errorf("%w: a failure message of %d bytes, over %d", errBadAnswer, len(r.Text), wire.ToolkitNoteBytes)
		}
		return answer{Status: r.Status, Text: r.Text}, nil
	case "result":
	default:
		return answer{}, fmt.Errorf("%w: an unknown status of %d bytes", errBadAnswer, len(r.Status))
	}
	if len(r.Head) > wire.ToolkitNoteBytes || len(r.Tail) > wire.ToolkitNoteBytes {
		return answer{}, fmt.Errorf("%w: notes of %d and %d bytes, over %d", errBadAnswer, len(r.Head), len(r.Tail), wire.ToolkitNoteBytes)
	}
	if n := int64(len(r.Text)); n > askFor(req.cap) {
		return answer{}, fmt.Errorf("%w: %d bytes of content, over the %d asked for", errBadAnswer, n, askFor(req.cap))
	}
	text, truncated := cutAt(r.Text, req.cap)
	var b strings.Builder
	b.WriteString(r.Head)
	b.WriteString(text)
	if text != "" && r.Tail != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n') // the notes after the content start a line
	}
	b.WriteString(r.Tail)
	return answer{Status: r.Status, Text: b.String(), Truncated: truncated}, nil
}

// cutAt cuts s, valid UTF-8, to at most n bytes at a character
// boundary, and says whether anything was cut.
func cutAt(s string, n int64) (string, bool) {
	if int64(len(s)) <= n {
		return s, false
	}
	// s[cut] is the first byte left out: move back to a character's start.
	cut := int(n)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}
