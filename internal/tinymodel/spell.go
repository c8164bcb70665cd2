package tinymodel

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A scripted model is a token-to-token table: each token on the answer's
// path has its own embedding dimension, and the output row of the token
// that follows it has a large weight there. A token can therefore lead to
// only one next token, so the text is spelled with tokens that are all
// different, and different from the start token (the newline that ends the
// generation prompt "<|im_start|>assistant\n").

// startPiece is the generation prompt's last token in ChatML templates.
const startPiece = "\n"

// markerPiece is the token whose presence in the prompt switches a model
// with an AfterTool script to that script: the "_response" of
// "<tool_response>", which Qwen's templates wrap every tool result in.
const markerPiece = "_response"

// spellLimit bounds the search (states visited per piece of text).
const spellLimit = 2_000_000

// errHard says the search gave up, which is not a proof that no spelling exists.
var errHard = errors.New("too hard to spell without repeating a token; vary its spacing or wording")

// spelling splits text into special tokens (matched as whole tokens, the
// longest first) and plain pieces, and spells each plain piece with normal
// tokens, none of them in used; it adds every id it uses to used.
func (v *vocab) spelling(text string, used map[int]bool) ([]int, error) {
	var specials []int
	for i, t := range v.types {
		if (t == tokControl || t == tokUserDefined) && !strings.HasPrefix(v.tokens[i], "[PAD") {
			specials = append(specials, i)
		}
	}
	sort.SliceStable(specials, func(a, b int) bool { return len(v.tokens[specials[a]]) > len(v.tokens[specials[b]]) })
	special := func(pos int) (int, bool) {
		for _, id := range specials {
			if strings.HasPrefix(text[pos:], v.tokens[id]) {
				return id, true
			}
		}
		return 0, false
	}
	var out []int
	for i := 0; i < len(text); {
		if id, ok := special(i); ok {
			switch {
			case id == v.eos:
				return nil, fmt.Errorf("tinymodel: the script holds %s, which the model writes itself at the end", v.tokens[id])
			case used[id]:
				return nil, fmt.Errorf("tinymodel: special token %s occurs twice in the scripts; a token table cannot repeat a token", v.tokens[id])
			}
			used[id] = true
			out = append(out, id)
			i += len(v.tokens[id])
			continue
		}
		j := i + 1
		for j < len(text) {
			if _, ok := special(j); ok {
				break
			}
			j++
		}
		ids, err := v.spellPlain(text[i:j], used)
		if err != nil {
			return nil, fmt.Errorf("tinymodel: %q: %w", text[i:j], err)
		}
		out = append(out, ids...)
		i = j
	}
	return out, nil
}

// spellPlain spells plain text with normal tokens. The search is
// exhaustive, depth first, longer tokens first, and remembers the states
// that failed (position, and the used tokens that could still occur from
// there), so "impossible" means no spelling without a repeat exists.
func (v *vocab) spellPlain(text string, used map[int]bool) ([]int, error) {
	s := byteLevel(text)
	n := len(s)
	normal, maxLen := v.normalTokens()
	starts := make([][]cand, n)
	lastStart := make(map[int]int) // id -> last position it can start at
	uses := make(map[int]int)      // id -> how many positions it can start at
	for a := range n {
		for b := min(n, a+maxLen); b > a; b-- {
			if id, ok := normal[s[a:b]]; ok {
				starts[a] = append(starts[a], cand{b - a, id})
				lastStart[id] = a
				uses[id]++
			}
		}
	}
	// Tokens that fit in one place only first, then longer first: a
	// token that fits in many places (a lone quote) is kept for where
	// nothing else fits.
	for _, c := range starts {
		slices.SortStableFunc(c, func(x, y cand) int { return min(uses[x.id], 2) - min(uses[y.id], 2) })
	}
	bd := &bound{s: s, starts: starts}
	for _, c := range starts {
		for _, x := range c {
			bd.maxLen = max(bd.maxLen, x.n)
		}
	}
	if c, need, have, short := bd.short(0, used); short {
		return nil, fmt.Errorf("cannot be spelled without repeating a token: it needs %d different tokens where its %q characters are, and only %d fit there; vary the spacing or wording there", need, unByteLevel(c), have)
	}
	failed := make(map[string]bool)
	reach := make([]bool, n+1)
	reach[n] = true
	nodes := 0
	var path []int
	var walk func(pos int) (bool, error)
	walk = func(pos int) (bool, error) {
		if pos == n {
			return true, nil
		}
		var blocking []int
		for id := range used {
			if last, ok := lastStart[id]; ok && last >= pos {
				blocking = append(blocking, id)
			}
		}
		slices.Sort(blocking)
		key := stateKey(pos, blocking)
		if failed[key] {
			return false, nil
		}
		if nodes++; nodes > spellLimit {
			return false, errHard
		}
		// Can the rest still be spelled with the tokens left, ignoring
		// that it may not repeat one? If not, no need to look further.
		for j := n - 1; j >= pos; j-- {
			reach[j] = false
			for _, c := range starts[j] {
				if !used[c.id] && reach[j+c.n] {
					reach[j] = true
					break
				}
			}
		}
		if !reach[pos] {
			failed[key] = true
			return false, nil
		}
		for _, c := range starts[pos] {
			if used[c.id] {
				continue
			}
			used[c.id] = true
			path = append(path, c.id)
			ok, err := walk(pos + c.n)
			if err != nil || ok {
				return ok, err
			}
			path = path[:len(path)-1]
			delete(used, c.id)
		}
		failed[key] = true
		return false, nil
	}
	ok, err := walk(0)
	if err != nil {
		for _, id := range path {
			delete(used, id)
		}
		return nil, err
	}
	if !ok {
		return nil, errors.New("cannot be spelled without repeating a token (a token table cannot repeat one); vary its spacing or wording")
	}
	return path, nil
}

// normalTokens maps the normal tokens' texts to their ids, made once.
func (v *vocab) normalTokens() (map[string]int, int) {
	v.normalOnce.Do(func() {
		v.normal = make(map[string]int)
		for i, t := range v.tokens {
			if v.types[i] == tokNormal {
				if _, dup := v.normal[t]; !dup {
					v.normal[t] = i
				}
				v.maxLen = max(v.maxLen, len(t))
			}
		}
	})
	return v.normal, v.maxLen
}

func stateKey(pos int, ids []int) string {
	b := strconv.AppendInt(nil, int64(pos), 10)
	for _, id := range ids {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(b)
}

// Plan is how a scripted model answers: the token paths its table holds.
type Plan struct {
	// Start is the generation prompt's last token, where both paths begin.
	Start int
	// Reply is the Script's tokens, then <|im_end|>.
	Reply []int
	// AfterTool is the AfterTool script's tokens, then <|im_end|>; empty
	// without one.
	AfterTool []int
	// Marker is the token whose presence in the prompt selects AfterTool
	// (-1 without one).
	Marker int
	// Context is set for ScriptTokens: the next token depends on the
	// tokens before the current one too, and Before is what the template
	// always writes before Start: <|im_end|> "\n" <|im_start|> "assistant".
	Context bool
	Before  [4]int

	v *vocab
}

// plan spells the scripts. The marker is kept out of both paths, so that an
// answer never switches a later one.
func (v *vocab) plan(script, afterTool string) (*Plan, error) {
	if v.get("tokenizer.ggml.model").Value != "gpt2" {
		return nil, errors.New("tinymodel: a script needs a byte-level BPE (gpt2) vocabulary")
	}
	start, ok := v.id[byteLevel(startPiece)]
	if !ok {
		return nil, errors.New("tinymodel: the vocabulary has no newline token to start a script from")
	}
	p := &Plan{Start: start, Marker: -1, v: v}
	used := map[int]bool{start: true, v.eos: true}
	if afterTool != "" {
		m, ok := v.id[byteLevel(markerPiece)]
		if !ok {
			return nil, fmt.Errorf("tinymodel: AfterTool needs a %q token in the vocabulary (Qwen's has one)", markerPiece)
		}
		p.Marker = m
		used[m] = true
	}
	ids, err := v.spelling(script, used)
	if err != nil {
		return nil, err
	}
	p.Reply = append(ids, v.eos)
	if afterTool != "" {
		ids, err := v.spelling(afterTool, used)
		if err != nil {
			return nil, fmt.Errorf("%w (the AfterTool script may not use a token of the Script either)", err)
		}
		p.AfterTool = append(ids, v.eos)
	}
	return p, nil
}

// String lists the table's steps, one per line: token id and text, then
// the id and text of the token it leads to.
func (p *Plan) String() string {
	var sb strings.Builder
	step := func(a, b int, note string) {
		fmt.Fprintf(&sb, "%6d %-22q -> %6d %q%s\n", a, p.text(a), b, p.text(b), note)
	}
	list := func(name string, path []int, note string) {
		fmt.Fprintf(&sb, "%s (%d tokens, then %s):\n", name, len(path)-1, p.text(p.v.eos))
		prev := p.Start
		for i, id := range path {
			n := ""
			if i == 0 {
				n = note
			}
			step(prev, id, n)
			prev = id
		}
	}
	if p.Context {
		sb.WriteString("(script tokens: a token may repeat, and the tokens before it choose its successor)\n")
	}
	list("Script", p.Reply, "")
	if len(p.AfterTool) > 0 {
		list("AfterTool", p.AfterTool, fmt.Sprintf("  (when the prompt holds %d %q)", p.Marker, p.text(p.Marker)))
	}
	return sb.String()
}

func (p *Plan) text(id int) string {
	if p.v.types[id] == tokNormal {
		return unByteLevel(p.v.tokens[id])
	}
	return p.v.tokens[id]
}

// Text returns the text of a token path (for tests and the dry run).
func (p *Plan) Text(path []int) string {
	var sb strings.Builder
	for _, id := range path {
		if id != p.v.eos {
			sb.WriteString(p.text(id))
		}
	}
	return sb.String()
}
