package podman

import (
	"errors"
	"strings"
	"testing"

	"boxmaker/wire"
)

// answerLine is the answer line for r, as the toolkit writes it.
func answerLine(t *testing.T, r toolkitResponse) []byte {
	t.Helper()
	b, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestAnswersArePutTogetherByBrokerd: the content is cut at the cap by
// brokerd, which alone says whether it was truncated; the notes go around
// it; ESC and other control characters the command printed stay content.
func TestAnswersArePutTogetherByBrokerd(t *testing.T) {
	req := request{cap: 10}
	for _, tc := range []struct {
		name      string
		in        toolkitResponse
		text      string
		truncated bool
	}{
		{"content alone", toolkitResponse{Status: "result", Text: "hello\n"}, "hello\n", false},
		{"exactly the cap", toolkitResponse{Status: "result", Text: "0123456789"}, "0123456789", false},
		{"one byte more", toolkitResponse{Status: "result", Text: "0123456789x"}, "0123456789", true},
		{"four bytes more", toolkitResponse{Status: "result", Text: "0123456789abcd"}, "0123456789", true},
		{"cut inside a character", toolkitResponse{Status: "result", Text: "ééééé€"}, "ééééé", true},
		{"cut before a character", toolkitResponse{Status: "result", Text: "012345678€"}, "012345678", true},
		{"a tail after text", toolkitResponse{Status: "result", Text: "x", Tail: "[exit status 3]"}, "x\n[exit status 3]", false},
		{"a tail after a line", toolkitResponse{Status: "result", Text: "x\n", Tail: "[exit status 3]"}, "x\n[exit status 3]", false},
		{"a tail after cut text", toolkitResponse{Status: "result", Text: "0123456789\n", Tail: "[exit status 1]"}, "0123456789\n[exit status 1]", true},
		{"a tail alone", toolkitResponse{Status: "result", Tail: "(no output)"}, "(no output)", false},
		{"a head", toolkitResponse{Status: "result", Head: "HTTP 200 OK\n\n", Text: "body"}, "HTTP 200 OK\n\nbody", false},
		{"escape sequences", toolkitResponse{Status: "result", Text: "\x1b[2J\x07\x7f\u009b"}, "\x1b[2J\x07\x7f\u009b", false},
		{"a failure", toolkitResponse{Status: "failed", Text: "cannot read /x: no such file or directory"}, "cannot read /x: no such file or directory", false},
	} {
		got, err := parseAnswer(answerLine(t, tc.in), req)
		if err != nil || got != (answer{Status: tc.in.Status, Text: tc.text, Truncated: tc.truncated}) {
			t.Errorf("%s: %+v, %v", tc.name, got, err)
		}
	}
}

// TestAnswersBrokerdRefuses: whatever wrote it, an answer that breaks a
// rule is refused, never passed on in part.
func TestAnswersBrokerdRefuses(t *testing.T) {
	req := request{cap: 10}
	note := strings.Repeat("n", wire.ToolkitNoteBytes+1)
	for name, line := range map[string][]byte{
		"over what was asked":     answerLine(t, toolkitResponse{Status: "result", Text: "0123456789abcde"}),
		"a NUL in the text":       answerLine(t, toolkitResponse{Status: "result", Text: "a\x00b"}),
		"a NUL in the head":       answerLine(t, toolkitResponse{Status: "result", Head: "\x00", Text: "x"}),
		"a NUL in the tail":       answerLine(t, toolkitResponse{Status: "result", Tail: "\x00"}),
		"a NUL in a failure":      answerLine(t, toolkitResponse{Status: "failed", Text: "\x00"}),
		"not UTF-8":               []byte("{\"status\":\"result\",\"head\":\"\",\"text\":\"caf\xe9\",\"tail\":\"\"}\n"),
		"a long head":             answerLine(t, toolkitResponse{Status: "result", Head: note}),
		"a long tail":             answerLine(t, toolkitResponse{Status: "result", Tail: note}),
		"a long failure":          answerLine(t, toolkitResponse{Status: "failed", Text: note}),
		"a failure with notes":    answerLine(t, toolkitResponse{Status: "failed", Text: "x", Tail: "y"}),
		"an unknown status":       answerLine(t, toolkitResponse{Status: "ok", Text: "x"}),
		"the toolkit's truncated": []byte(`{"status":"result","head":"","text":"x","tail":"","truncated":false}` + "\n"),
		"the old answer":          []byte(`{"status":"result","text":"x","truncated":false}` + "\n"),
		"more after the line":     append(answerLine(t, toolkitResponse{Status: "result", Text: "x"}), "more"...),
		"a second line":           append(answerLine(t, toolkitResponse{Status: "result", Text: "x"}), answerLine(t, toolkitResponse{Status: "result", Text: "y"})...),
		"an empty line":           []byte("\n"),
	} {
		got, err := parseAnswer(line, req)
		if err == nil || !errors.Is(err, errBadAnswer) && !errors.Is(err, errNoAnswer) {
			t.Errorf("%s: taken as %+v (%v)", name, got, err)
		}
	}
	if _, err := parseAnswer([]byte(`{"status":"result"`), req); !errors.Is(err, errNoAnswer) {
		t.Errorf("no whole line: %v", err)
	}
}

// TestARefusedAnswerQuotesNothingOfIt: the answer line is the container's
// bytes, and a refusal's text goes to brokerd's log (run) as well as to the
// model; for a call with a secret it may hold the value, in a form (a JSON
// pointer's ~1 for '/', Go's quoting) that redaction does not know. So the
// refusal says what rule broke, never what the line held.
func TestARefusedAnswerQuotesNothingOfIt(t *testing.T) {
	const leak = "sk-live/Zq8~pV3xT9"
	req := request{cap: 10}
	for name, line := range map[string]string{
		"an unknown member":     `{"status":"result","head":"","text":"","tail":"","` + leak + `":1}`,
		"a member out of place": `{"status":"result","` + leak + `":1,"head":"","text":"","tail":""}`,
		"a duplicate member":    `{"` + leak + `":1,"` + leak + `":2}`,
		"a syntax error":        `{"status":"result","head":"","text":"","tail":"","` + leak + ` x"}`,
		"an unknown status":     `{"status":"` + leak + `","head":"","text":"x","tail":""}`,
		"a wrong type":          `{"status":"result","head":"","text":["` + leak + `"],"tail":""}`,
	} {
		_, err := parseAnswer([]byte(line+"\n"), req)
		if err == nil || !errors.Is(err, errBadAnswer) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		msg := err.Error()
		for _, form := range []string{leak, "Zq8", strings.NewReplacer("~", "~0", "/", "~1").Replace(leak)} {
			if strings.Contains(msg, form) {
				t.Errorf("%s: the refusal quotes the line: %s", name, msg)
				break
			}
		}
	}
}

// TestAnswerBufferStopsAtItsLimit: the attach stream is cut once the
// container has written more than any answer can be.
func TestAnswerBufferStopsAtItsLimit(t *testing.T) {
	req := request{cap: 1}
	a := newAnswerBuffer(req.answerLimit())
	chunk := []byte(strings.Repeat("y", 4096))
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		_, err = a.Write(chunk)
	}
	if b, over := a.bytes(); !errors.Is(err, errTooLong) || !over || len(b) > req.answerLimit() {
		t.Fatalf("%v, over %v, %d bytes", err, over, len(b))
	}
	select {
	case <-a.done:
	default:
		t.Fatal("done is not closed")
	}
}
