package inert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// held is what a turn holds of its events, in bytes.
func held(tu *Turn) int {
	n := 0
	for _, it := range tu.items {
		n += len(it.text) + len(it.tool) + len(it.status)
	}
	return n
}

// TestTurnFlood: a loopd that sends events without end (a compromised one,
// or a model in a loop) cannot make a turn hold more than a post could
// ever show: the oldest parts are let go, and the post says how many are
// not shown. (A turn kept every event, for as long as the turn lasted.)
func TestTurnFlood(t *testing.T) {
	var tu Turn
	for i := range 100000 {
		tu.Add(wire.TurnToolCall{Call: wire.CallID(i), Tool: "read_file", Arguments: "{}"})
	}
	if n := len(tu.items); n > 10000 {
		t.Fatalf("100000 tool calls: the turn holds %d parts", n)
	}
	out := checkTurn(t, &tu)
	if !strings.HasPrefix(out, "(… the first ") || !strings.Contains(out, "tool call 99999 `read_file`: running") {
		t.Fatalf("got %q…%q", out[:120], out[len(out)-120:])
	}
	var big Turn
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", 1500) // 66 KB
	for range 300 {
		big.Add(wire.TurnText{Content: text})
	}
	big.Add(wire.TurnReply{Content: "done"})
	if n := held(&big); n > 8<<20 {
		t.Fatalf("300 texts of %d bytes: the turn holds %d bytes", len(text), n)
	}
	if out := checkTurn(t, &big); !strings.HasSuffix(out, "> done") || !strings.Contains(out, "the first 300 parts") {
		t.Fatalf("got %q…%q", out[:120], out[len(out)-120:])
	}
}

// unbounded runs f with a turn's bounds lifted: the naive oracle keeps
// every part.
func unbounded(f func()) {
	parts, bytes := keepParts, keepBytes
	keepParts, keepBytes = math.MaxInt, math.MaxInt
	defer func() { keepParts, keepBytes = parts, bytes }()
	f()
}

// keptCall is a tool call whose line the turn still holds, running
// unless done: its tool is named after it.
func keptCall(r *rand.Rand, tu *Turn, running bool) (wire.CallID, bool) {
	var calls []wire.CallID
	for _, it := range tu.items {
		if it.kind == itemCall && (!running || it.status == "running") {
			calls = append(calls, it.call)
		}
	}
	if len(calls) == 0 {
		return 0, false
	}
	return calls[r.IntN(len(calls))], true
}

func toolOf(c wire.CallID) string { return fmt.Sprintf("tool-%d", c) }

// TestTurnBoundShowsTheSame: letting go of old parts changes nothing a post
// shows, against a turn that keeps them all: long runs of small events,
// and long runs of texts (ordinary text, for which the byte bound is far
// beyond anything a post can show). Outcomes and approvals are of calls
// whose lines are still held: an outcome of a call whose line was let go
// shows as a line of its own (in the oracle, it changes a line not shown).
func TestTurnBoundShowsTheSame(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 22))
	prose := strings.Repeat("The notes say to water the plants on Tuesday. ", 400) // 18 KB
	for round := range 2 {
		var tu, oracle Turn
		most := 0 // the most bytes held
		add := func(ev wire.TurnEvent) {
			tu.Add(ev)
			most = max(most, tu.bytes)
			unbounded(func() { oracle.Add(ev) })
		}
		for e := 0; e < 9000+r.IntN(1000); e++ {
			switch r.IntN(8) {
			case 0:
				add(wire.TurnText{Content: hostile(r)})
			case 1:
				add(wire.TurnText{Content: prose[:r.IntN(len(prose))] + "."})
			case 2, 3:
				add(wire.TurnToolCall{Call: wire.CallID(e), Tool: toolOf(wire.CallID(e)), Arguments: "{}"})
			case 4:
				if c, ok := keptCall(r, &tu, true); ok {
					add(wire.TurnApprovalPending{Approval: uint64(e), Tool: toolOf(c), Expires: wire.TimestampOf(fxExpires)})
				}
			case 5:
				if c, ok := keptCall(r, &tu, false); ok {
					add(wire.TurnToolOutcome{Call: c, Tool: toolOf(c), Status: wire.ToolResult, Class: wire.Private})
				}
			case 6:
				add(wire.TurnAnswerCut{Tokens: 10, Reason: wire.CutContextFull})
			case 7:
				if round%2 == 0 && r.IntN(100) == 0 { // 360 KB: past keepBytes after a few
					for range 20 {
						add(wire.TurnText{Content: prose})
					}
				}
			}
			if e == 5000 {
				if got, want := tu.Text(), oracle.Text(); got != want {
					t.Fatalf("round %d, event %d: the bounded turn shows\n%q…\nthe oracle\n%q…", round, e, got[:200], want[:200])
				}
			}
		}
		add(wire.TurnReply{Content: prose})
		if got, want := checkTurn(t, &tu), oracle.Text(); got != want {
			t.Fatalf("round %d: the bounded turn shows\n%q…\nthe oracle\n%q…", round, got[:200], want[:200])
		}
		if round%2 == 0 && most < keepBytes-len(prose) {
			t.Fatalf("round %d never reached keepBytes (at most %d bytes held)", round, most)
		}
		if tu.dropped == 0 || len(tu.items) > keepParts || held(&tu) != tu.bytes || held(&tu) > keepBytes+len(prose) {
			t.Fatalf("round %d: %d parts let go, %d kept, %d bytes", round, tu.dropped, len(tu.items), held(&tu))
		}
	}
}

// eagerText is Text as it was, rendering every part: the oracle for Text,
// which renders only the parts that can be shown.
func eagerText(t *Turn) string {
	parts := make([]string, len(t.items))
	tooLong := make([]bool, len(t.items))
	whole := t.dropped == 0
	for i, it := range t.items {
		if it.kind == itemText && nonSpace(it.text) > MaxPostRunes {
			tooLong[i], whole = true, false
			continue
		}
		parts[i] = it.render()
	}
	if s := t.join(parts, 0); whole && utf8.RuneCountInString(s) <= MaxPostRunes {
		return s
	}
	total, from := 0, len(parts)
	for from > 0 && !tooLong[from-1] {
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
	last := len(parts) - 1
	room := MaxPostRunes - utf8.RuneCountInString(earlierNote(t.dropped+last)) - 2
	if t.items[last].kind == itemText {
		parts[last] = cutMiddle(t.items[last].text, room)
	}
	return t.join(parts, last)
}

// TestTurnTextRendersOnlyTheTail: Text, which renders parts from the last
// back only while they can be shown, makes the same post as rendering
// them all, over random turns of every length: empty, a few parts, more
// than a post holds, texts longer than a post; and it stays cheap for a
// turn of thousands of parts.
func TestTurnTextRendersOnlyTheTail(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 14))
	prose := strings.Repeat("Water the plants on Tuesday, and the ferns on Friday. ", 100)
	for i := range 200 {
		var tu Turn
		n := r.IntN(12)
		if i%20 == 0 {
			n = r.IntN(1000)
		}
		for e := range n {
			switch r.IntN(7) {
			case 0:
				tu.Add(wire.TurnText{Content: hostile(r)})
			case 1:
				tu.Add(wire.TurnText{Content: prose[:r.IntN(len(prose))]})
			case 2:
				tu.Add(wire.TurnToolCall{Call: wire.CallID(e), Tool: hostile(r), Arguments: "{}"})
			case 3:
				tu.Add(wire.TurnToolOutcome{Call: wire.CallID(r.IntN(e + 1)), Tool: "t", Status: wire.ToolFailed, Class: wire.Public})
			case 4:
				tu.Add(wire.TurnApprovalPending{Approval: 1, Tool: hostile(r), Expires: wire.TimestampOf(fxExpires)})
			case 5:
				tu.Add(wire.TurnFailed{Message: hostile(r)})
			case 6:
				if r.IntN(20) == 0 {
					tu.Add(wire.TurnReply{Content: strings.Repeat(prose, 1+r.IntN(12))})
				}
			}
		}
		if got, want := tu.Text(), eagerText(&tu); got != want {
			t.Fatalf("turn %d of %d parts:\n%q\nrendering every part:\n%q", i, len(tu.items), got, want)
		}
	}
	var tu Turn
	for i := range keepParts {
		tu.Add(wire.TurnText{Content: hostile(r) + fmt.Sprint(i)})
	}
	start := time.Now()
	tu.Text()
	lazy := time.Since(start)
	start = time.Now()
	eagerText(&tu)
	eager := time.Since(start)
	t.Logf("Text of a turn of %d parts: %v; rendering every part: %v", keepParts, lazy, eager)
	if lazy*4 > eager {
		t.Fatalf("Text of a turn of %d parts took %v, rendering every part %v", keepParts, lazy, eager)
	}
}
