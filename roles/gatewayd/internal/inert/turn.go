package inert

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"boxmaker/wire"
)

// Turn is the conversation reply to one owner message (issue 14, point 3):
// one post per turn, edited as the turn's events arrive. Everything the model
// wrote (its text and its reply) is shown through Text inside a block quote,
// so its words have the quote's gutter and gatewayd's own lines (tool calls,
// notes) do not: no model text can pass for one of them. The zero value is
// an empty turn.
type Turn struct {
	items []turnItem
	// dropped counts the oldest parts let go (keepParts, keepBytes); bytes
	// is what items hold.
	dropped, bytes int
}

// A turn keeps only its last parts: without a bound, a loopd sending events
// without end (a compromised one, or a model in a loop) would grow
// gatewayd's memory for as long as the turn lasts, and the work of each
// Text (which renders every part it holds, at every edit). Every part
// renders to at least three runes with its separator, so no more than
// MaxPostRunes/3 parts can ever be shown and keepParts changes nothing a
// post shows. keepBytes is eight times what a post's 16,383 runes of
// ordinary text take in UTF-8 with its spaces: it lets go only of older
// text that a post could show if it rendered to almost nothing (long runs
// of white space or fence markers). Parts let go count as parts not shown.
var keepParts, keepBytes = 8192, 1 << 20

func (it turnItem) size() int { return len(it.text) + len(it.tool) + len(it.status) }

// push appends a part.
func (t *Turn) push(it turnItem) {
	t.items = append(t.items, it)
	t.bytes += it.size()
}

// setStatus changes the status of a tool call's line.
func (t *Turn) setStatus(it *turnItem, status string) {
	t.bytes += len(status) - len(it.status)
	it.status = status
}

// trim lets go of the oldest parts beyond keepParts and keepBytes, but
// never the last.
func (t *Turn) trim() {
	n := 0
	for len(t.items)-n > 1 && (len(t.items)-n > keepParts || t.bytes > keepBytes) {
		t.bytes -= t.items[n].size()
		t.items[n] = turnItem{} // and its text with it
		n++
	}
	if n > 0 {
		t.items = t.items[n:]
		t.dropped += n
	}
}

type itemKind uint8

const (
	itemText itemKind = iota + 1 // model text, shown quoted
	itemCall                     // one tool call's line
	itemNote                     // one line of gatewayd's own, already inert
)

type turnItem struct {
	kind   itemKind
	text   string // itemText: the model's text; itemNote: the line
	call   wire.CallID
	tool   string
	status string // itemCall: how the call stands, inert
}

// Add records one event of the turn.
func (t *Turn) Add(ev wire.TurnEvent) {
	t.add(ev)
	t.trim()
}

func (t *Turn) add(ev wire.TurnEvent) {
	switch ev := ev.(type) {
	case wire.TurnSession:
		// gatewayd keeps the thread's session; the post does not show it.
	case wire.TurnText:
		if strings.TrimSpace(ev.Content) != "" {
			t.push(turnItem{kind: itemText, text: ev.Content})
		}
	case wire.TurnToolCall:
		t.push(turnItem{kind: itemCall, call: ev.Call, tool: ev.Tool, status: "running"})
	case wire.TurnApprovalPending:
		// The event names the tool, not the call: it is the last call of
		// that tool still running.
		status := fmt.Sprintf("waiting for approval %d (expires %s)", ev.Approval,
			ev.Expires.Time().UTC().Format("15:04:05 UTC"))
		for i := len(t.items) - 1; i >= 0; i-- {
			if it := &t.items[i]; it.kind == itemCall && it.tool == ev.Tool && it.status == "running" {
				t.setStatus(it, status)
				return
			}
		}
		t.push(turnItem{kind: itemNote, text: fmt.Sprintf("a call of %s is %s.", value(ev.Tool), status)})
	case wire.TurnToolOutcome:
		status := outcomeStatus(ev)
		for i := len(t.items) - 1; i >= 0; i-- {
			if it := &t.items[i]; it.kind == itemCall && it.call == ev.Call {
				t.setStatus(it, status)
				return
			}
		}
		t.push(turnItem{kind: itemCall, call: ev.Call, tool: ev.Tool, status: status})
	case wire.TurnAnswerCut:
		why := "it reached loopd's answer limit (" + Code("[model] max_answer_tokens") + ")"
		if ev.Reason == wire.CutContextFull {
			why = "the model's context was full"
		}
		t.push(turnItem{kind: itemNote,
			text: fmt.Sprintf("✂️ The answer below was cut short after %d tokens: %s.", ev.Tokens, why)})
	case wire.TurnReply:
		if strings.TrimSpace(ev.Content) == "" {
			t.push(turnItem{kind: itemNote, text: "(The model's reply was empty.)"})
			return
		}
		t.push(turnItem{kind: itemText, text: ev.Content})
	case wire.TurnFailed:
		t.push(turnItem{kind: itemNote, text: "⚠️ The turn failed. loopd says:"})
		t.push(turnItem{kind: itemText, text: ev.Message})
	}
}

// outcomeStatus is how a tool call ended, in words.
func outcomeStatus(ev wire.TurnToolOutcome) string {
	switch ev.Status {
	case wire.ToolResult:
		s := "ran (result " + ev.Class.String()
		if ev.Truncated {
			s += ", truncated"
		}
		return s + ")"
	case wire.ToolFailed:
		return "failed"
	case wire.ToolDenied:
		if ev.Reason != nil {
			return "denied (" + Code(ev.Reason.String()) + ")"
		}
		return "denied"
	}
	return Code(ev.Status.String())
}

// Text is the post: the turn so far, at most MaxPostRunes. When it would be
// longer, the oldest parts are left out (a line says how many), and when
// the last part alone is too long, the middle of its text is: the cuts are
// made in the model's text before it is rendered, so they never fall inside
// a code span or a fence of the post.
func (t *Turn) Text() string {
	// Parts are rendered from the last back, and only while they could
	// still be shown: no part before a tail longer than a post ever is, and
	// rendering every part at every edit would cost a turn of many parts
	// most of a second each time. A text with more non-space characters
	// than a post can hold cannot fit however it renders (Text drops only
	// whitespace): it is not rendered whole, which for a long reply would
	// take most of the time.
	parts := make([]string, len(t.items))
	first, runes, tooLong := len(t.items), 0, false
	for first > 0 && runes <= MaxPostRunes {
		it := t.items[first-1]
		if it.kind == itemText && nonSpace(it.text) > MaxPostRunes {
			tooLong = true
			break
		}
		first--
		parts[first] = it.render()
		runes += utf8.RuneCountInString(parts[first])
	}
	if t.dropped == 0 && first == 0 && !tooLong {
		if s := t.join(parts, 0); utf8.RuneCountInString(s) <= MaxPostRunes {
			return s
		}
	}
	// The longest tail of parts that fits behind the marker line.
	total, from := 0, len(parts)
	for from > first {
		n := utf8.RuneCountInString(parts[from-1]) + 2
		if total+n+utf8.RuneCountInString(earlierNote(t.dropped+from-1))+2 > MaxPostRunes {
			break
		}
		total += n
		from--
	}
	if from < len(parts) {
		return t.join(parts, from)
	}
	// Not even the last part fits: cut the middle of its text.
	// (Only a text can be that long: a line's values are capped.)
	last := len(parts) - 1
	room := MaxPostRunes - utf8.RuneCountInString(earlierNote(t.dropped+last)) - 2
	if t.items[last].kind == itemText {
		parts[last] = cutMiddle(t.items[last].text, room)
	}
	return t.join(parts, last)
}

// nonSpace counts the runes of s that are not white space.
func nonSpace(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

// earlierNote says that the turn's first n parts are not shown.
func earlierNote(n int) string {
	return fmt.Sprintf("(… the first %d parts of this turn are not shown: the post would be longer than Mattermost allows …)", n)
}

// join renders parts[from:] (with a note for those left out, and those
// let go before), one tool or note line after another, and a blank line
// around each quote.
func (t *Turn) join(parts []string, from int) string {
	var b strings.Builder
	prev := itemKind(0)
	if t.dropped+from > 0 {
		b.WriteString(earlierNote(t.dropped + from))
		prev = itemText // a blank line after it
	}
	for i := from; i < len(parts); i++ {
		k := t.items[i].kind
		switch {
		case prev == 0:
		case k == itemText || prev == itemText:
			b.WriteString("\n\n")
		default:
			b.WriteString("\n")
		}
		b.WriteString(parts[i])
		prev = k
	}
	return b.String()
}

func (it turnItem) render() string {
	switch it.kind {
	case itemText:
		return quote(Text(it.text))
	case itemCall:
		return fmt.Sprintf("tool call %d %s: %s", it.call, value(it.tool), it.status)
	}
	return it.text
}

// quote puts rendered text in a block quote: "> " before every line, ">"
// alone for a blank one.
func quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + l
		}
	}
	return strings.Join(lines, "\n")
}

// cutMiddle renders text quoted in at most room runes: all of it when it
// fits, else as much of its start and end as fits, with a line between
// saying how much is left out.
func cutMiddle(text string, room int) string {
	rs := []rune(text)
	render := func(keep int) string {
		head, tail := string(rs[:keep]), string(rs[len(rs)-keep:])
		return quote(Text(head)) + "\n\n" +
			fmt.Sprintf("(… %d characters of this text are not shown …)", len(rs)-2*keep) +
			"\n\n" + quote(Text(tail))
	}
	// The largest keep that fits, by bisection: the rendered length grows
	// with keep, give or take escapes, so the answer is checked, not assumed.
	lo, hi := 0, min(len(rs)/2, room)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if utf8.RuneCountInString(render(mid)) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for ; lo > 0 && utf8.RuneCountInString(render(lo)) > room; lo-- {
	}
	return render(lo)
}
