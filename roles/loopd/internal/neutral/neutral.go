// Package neutral keeps untrusted text from speaking the chat template's
// language. llama-server renders the messages with the model's template and
// then tokenizes the whole prompt with special tokens enabled, so the text
// "<|im_end|>" inside a tool result becomes the real end-of-turn token: a
// web page could close the tool's turn and open a fake user or system turn.
//
// Neutralise inserts U+200B ZERO WIDTH SPACE after the first character of
// every control string it knows: the fixed Markers below as a floor, and
// every special, control and user-defined token of the model actually
// served, which loopd learns from the model server when it starts (see
// roles/loopd/internal/specials), so "<|im_start|>" reaches the model as
// "<\u200b|im_start|>": the same to a reader, but no longer the special
// token, and no longer anything a template parses as a tool call or tool
// response. A zero-width space was chosen over replacing or deleting
// characters because it changes what the model reads least (quoted code
// and documentation that mention the markers stay legible) and it cannot
// itself form a marker. Any "<|" is neutralised, which covers every
// <|...|> token (ChatML, Llama 3, Phi, gpt-oss, Granite, ...) without
// listing each; the rest are listed in Markers.
//
// The session log keeps the original text; only what is sent is changed.
package neutral

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ZWSP is the character inserted.
const ZWSP = "\u200b"

// Markers are the control strings always neutralised, whatever the model:
// "<|" and the markers of common template families. They are a floor, not
// the list: the served model's own tokens are added at startup. Matching is
// exact (special tokens are case-sensitive).
var Markers = []string{
	// Every <|...|> token: ChatML (<|im_start|>, <|im_end|>, <|endoftext|>),
	// Llama 3 (<|start_header_id|>, <|eot_id|>, <|python_tag|>), Phi,
	// gpt-oss harmony (<|channel|>, <|message|>, <|call|>), Granite.
	"<|",
	// DeepSeek's full-width bars: <｜begin▁of▁sentence｜>, <｜tool▁calls▁begin｜>.
	"<｜",
	// Hermes / Qwen tool markup.
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	"<tools>", "</tools>", "<function=", "</function>", "<parameter=", "</parameter>",
	// Reasoning blocks.
	"<think>", "</think>",
	// Gemma.
	"<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
	// Llama 2 and Mistral.
	"<s>", "</s>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
	"[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
	"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
	// Command-R.
	"<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
}

// A Set is the control strings one served model knows: the fixed Markers
// (the floor, kept whatever the model) and those derived from the model's
// own vocabulary (roles/loopd/internal/specials). Matching walks a byte trie,
// so a vocabulary of thousands of special tokens costs no more per byte of
// text than a dozen.
type Set struct {
	root    *node
	rev     *node // every marker reversed, for the start of a text
	maxLen  int   // the longest marker, in bytes
	markers int
}

type node struct {
	next map[byte]*node
	end  bool // a marker ends here
}

// NewSet is the floor plus extra. A marker must be valid UTF-8 of at least
// two characters without a ZWSP in it: inserting a ZWSP after the first
// character breaks such a marker and cannot form another, and a one
// character marker could not be broken at all (the derivation never passes
// one; see docs/decisions.md).
func NewSet(extra []string) (*Set, error) {
	s := &Set{root: &node{}, rev: &node{}}
	for _, list := range [][]string{Markers, extra} {
		for _, m := range list {
			if err := s.add(m); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func (s *Set) add(m string) error {
	if !utf8.ValidString(m) || utf8.RuneCountInString(m) < 2 || strings.Contains(m, ZWSP) {
		return fmt.Errorf("%q cannot be neutralised by a zero-width space after its first character", m)
	}
	n := s.root
	for i := 0; i < len(m); i++ {
		n = n.child(m[i])
	}
	if !n.end {
		s.markers++
	}
	n.end = true
	r := s.rev
	for i := len(m) - 1; i >= 0; i-- {
		r = r.child(m[i])
	}
	r.end = true
	s.maxLen = max(s.maxLen, len(m))
	return nil
}

func (n *node) child(b byte) *node {
	c := n.next[b]
	if c == nil {
		if n.next == nil {
			n.next = map[byte]*node{}
		}
		c = &node{}
		n.next[b] = c
	}
	return c
}

// Len is the number of distinct markers, the floor's included.
func (s *Set) Len() int { return s.markers }

// floor is the set of Markers alone.
var floor = func() *Set {
	s, err := NewSet(nil)
	if err != nil {
		panic(err) // Markers is a constant list; TestEveryMarker checks it
	}
	return s
}()

// Floor is the set of the fixed Markers alone: what a loopd that has not
// asked the model server would use (only tests do; serve refuses to start
// without the model's own tokens).
func Floor() *Set { return floor }

// Neutralise is Floor().Neutralise.
func Neutralise(s string) string { return floor.Neutralise(s) }

// Contains is Floor().Contains.
func Contains(s string) bool { return floor.Contains(s) }

// Neutralise returns s with a ZWSP after the first character of every
// marker occurrence, and at an end of s that could join the template's
// text into a marker. Text without markers is returned unchanged (and
// unallocated). Overlapping occurrences are each broken, because the scan
// resumes right after a match's first character.
func (set *Set) Neutralise(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if !set.startsAt(s, i) {
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		if b.Len() == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[last : i+n])
		b.WriteString(ZWSP)
		last = i + n
		i += n - 1
	}
	out := s
	if last > 0 {
		b.WriteString(s[last:])
		out = b.String()
	}
	// The template's own text comes right before and after: a marker could
	// start at the end of this text and end in the template's text, or the
	// other way round. A ZWSP closes an end that is the beginning of a
	// marker, and opens a start that is the end of one.
	if set.endsInMarker(out) {
		out += ZWSP
	}
	if set.startsInMarker(out) {
		out = ZWSP + out
	}
	return out
}

// endsInMarker reports whether s ends with a proper beginning of a marker.
func (set *Set) endsInMarker(s string) bool {
	for i := max(0, len(s)-set.maxLen+1); i < len(s); i++ {
		n := set.root
		j := i
		for ; j < len(s) && n != nil; j++ {
			n = n.next[s[j]]
		}
		if n != nil && len(n.next) > 0 {
			return true
		}
	}
	return false
}

// startsInMarker reports whether s starts with a proper end of a marker.
func (set *Set) startsInMarker(s string) bool {
	for k := 0; k < min(len(s), set.maxLen-1); k++ {
		// s[:k+1] is the end of a marker if, read backwards, it is a
		// path in rev that goes on.
		n := set.rev
		for j := k; j >= 0 && n != nil; j-- {
			n = n.next[s[j]]
		}
		if n != nil && len(n.next) > 0 {
			return true
		}
	}
	return false
}

// startsAt reports whether a marker starts at s[i:].
func (set *Set) startsAt(s string, i int) bool {
	n := set.root
	for ; i < len(s); i++ {
		if n = n.next[s[i]]; n == nil {
			return false
		}
		if n.end {
			return true
		}
	}
	return false
}

// Contains reports whether s holds any marker: true of nothing Neutralise
// returns.
func (set *Set) Contains(s string) bool {
	for i := 0; i < len(s); i++ {
		if set.startsAt(s, i) {
			return true
		}
	}
	return false
}
