// Package specials learns, from the model server itself, which strings the
// served model's tokenizer turns into special tokens, so that neutral can
// break every one of them in untrusted text: a fixed list of template
// markers always misses some family, and a model's vocabulary can hold
// tokens no list names ("[PAD151665]" in Qwen2.5's).
//
// llama-server tokenizes a rendered prompt with special parsing on: before
// any BPE, it cuts the text at every occurrence of a control, user-defined
// or unknown token's text (llama-vocab.cpp, tokenizer_st_partition), and
// without special parsing it still cuts at user-defined ones. So:
//
//   - a control (or unknown) token is a piece that tokenizes to itself with
//     special parsing and to something else without: exact, one request
//     for the whole vocabulary each way;
//   - a user-defined token tokenizes to itself either way, as most ordinary
//     tokens do, and the server shows no token attributes. What sets it
//     apart is that it is cut out before BPE: it stays one token inside
//     any text, while an ordinary token merges with its neighbours
//     somewhere. userDefined tests exactly that (a longer ordinary token
//     containing it, and a few surrounding contexts), among tokens that
//     look like markers (punctuation and a letter or digit).
//
// docs/decisions.md ("The served model's special tokens") has the reasoning
// and the measured cost.
package specials

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"boxmaker/roles/loopd/internal/llama"
	"boxmaker/roles/loopd/internal/neutral"
	"boxmaker/runbook"
)

// Tokenizer is what Derive and Check need of the model server; the llama
// client, through inferproxy, is one.
type Tokenizer interface {
	Vocab(ctx context.Context) (model string, nVocab int, err error)
	Pieces(ctx context.Context, ids []int) ([]llama.Piece, error)
	TokenizeEach(ctx context.Context, texts []string, parseSpecial bool) ([][]int, error)
}

// Token is one vocabulary entry.
type Token struct {
	ID   int
	Text string
}

// Vocabulary is what Derive learnt of the served model.
type Vocabulary struct {
	Model  string
	NVocab int
	// Control are tokens matched only with special parsing; UserDefined
	// are matched in any text. Both are neutralised.
	Control, UserDefined []Token
	// Skipped are control tokens that are all whitespace: they cannot be
	// broken by a zero-width space without mangling ordinary text, and
	// carry no template structure (docs/decisions.md). Whitespace is never
	// marker-like, so no user-defined token is tested for.
	Skipped []Token
	// Set is neutral's floor plus Control and UserDefined.
	Set *neutral.Set
	// Took is how long the derivation took.
	Took time.Duration

	special map[int]bool // the ids of Control and UserDefined
	probe   []Token      // a few of them, to notice a different model
}

// Special reports whether id is one of the model's special tokens.
func (v *Vocabulary) Special(id int) bool { return v.special[id] }

// Batches: ids per /tokenize request for the pieces, and bytes of text per
// request when tokenizing; both keep a request far under inferproxy's
// default body limit and each answer a few megabytes at most.
const (
	idsPerRequest   = 16384
	bytesPerRequest = 512 << 10
)

// contexts surround a candidate to see whether it stays one token: the
// text's own first and last characters repeated outwards (they join a
// punctuation run or a word at either end), letters, underscores, a comma
// and a digit. Among Qwen2.5's marker-like tokens these four leave the
// model file's 273 user-defined ones and 30 ordinary ones ("']['",
// "><!--"); docs/decisions.md has the figures for other vocabularies. A
// user-defined token is cut out before any of this and survives them all.
var contexts = []func(string) string{
	func(t string) string {
		f, _ := utf8.DecodeRuneInString(t)
		l, _ := utf8.DecodeLastRuneInString(t)
		return string(f) + t + string(l)
	},
	func(t string) string { return "a" + t + "a" },
	func(t string) string { return "_" + t + "_" },
	func(t string) string { return "," + t + "0" },
}

// Derive asks the model server for its whole vocabulary and finds every
// special token in it.
func Derive(ctx context.Context, tk Tokenizer) (*Vocabulary, error) {
	t0 := time.Now()
	model, n, err := tk.Vocab(ctx)
	if err != nil {
		return nil, err
	}
	v := &Vocabulary{Model: model, NVocab: n, special: map[int]bool{}}
	var cands []Token
	for lo := 0; lo < n; lo += idsPerRequest {
		ids := make([]int, 0, idsPerRequest)
		for id := lo; id < min(n, lo+idsPerRequest); id++ {
			ids = append(ids, id)
		}
		ps, err := tk.Pieces(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			// A piece that is not UTF-8 is a byte of a longer character:
			// untrusted text (valid UTF-8) can only reach it through BPE.
			if p.Valid && p.Text != "" {
				cands = append(cands, Token{p.ID, p.Text})
			}
		}
	}
	with, err := tokenizeAll(ctx, tk, cands, nil, true)
	if err != nil {
		return nil, err
	}
	without, err := tokenizeAll(ctx, tk, cands, nil, false)
	if err != nil {
		return nil, err
	}
	var user []Token
	for i, c := range cands {
		switch {
		case !slices.Equal(with[i], []int{c.ID}):
			// Special parsing does not give this token back: another token
			// of the same text wins, or the text is ordinary.
		case !slices.Equal(without[i], with[i]):
			v.add(&v.Control, c)
		case utf8.RuneCountInString(c.Text) >= 2 && markup(c.Text):
			// One character is every ordinary token of one character,
			// which survives any context: a user-defined one is not told
			// apart, and not needed, since writing that character is
			// writing that token whatever its kind.
			user = append(user, c)
		}
	}
	if user, err = userDefined(ctx, tk, user); err != nil {
		return nil, err
	}
	for _, c := range user {
		v.add(&v.UserDefined, c)
	}
	var markers []string
	for _, list := range [][]Token{v.Control, v.UserDefined} {
		for _, t := range list {
			markers = append(markers, t.Text)
			if len(v.probe) < 16 {
				v.probe = append(v.probe, t)
			}
		}
	}
	if v.Set, err = neutral.NewSet(markers); err != nil {
		return nil, fmt.Errorf("the model's special tokens cannot all be neutralised: %w", err)
	}
	v.Took = time.Since(t0)
	return v, nil
}

// markup reports whether t looks like a template marker: an ASCII
// punctuation or symbol character with a letter or digit, or an opening
// bracket or bar ('<', '[', '|') alone. Every marker of every template
// family seen is one ("<tool_call>", "[TOOL_CALLS]", "<｜Assistant｜>",
// "<|\"|>", "<unused0>", "[PAD151665]"): a marker must stand apart from
// prose. Without this, the behavioural test below also flags tens of
// thousands of ordinary tokens that BPE keeps whole in any context
// (41,000 of Qwen2.5's, " this", " return"; runs such as "%%%%" and
// "----------------"; Tibetan syllables with their tsheg).
func markup(t string) bool {
	var punct, alnum bool
	for _, r := range t {
		switch {
		case r == '<' || r == '[' || r == '|':
			return true
		case r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r)):
			punct = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			alnum = true
		}
	}
	return punct && alnum
}

// add files c under list, or under Skipped when it is all whitespace. A
// control token of one character, which no insertion breaks, is kept:
// neutral.NewSet refuses it, so loopd fails closed on such a model.
func (v *Vocabulary) add(list *[]Token, c Token) {
	if strings.TrimFunc(c.Text, unicode.IsSpace) == "" {
		v.Skipped = append(v.Skipped, c)
		return
	}
	v.special[c.ID] = true
	*list = append(*list, c)
}

// tokenizeAll tokenizes wrap(text) of each token, every text on its own,
// in as few requests as bytesPerRequest allows.
func tokenizeAll(ctx context.Context, tk Tokenizer, toks []Token, wrap func(string) string, parseSpecial bool) ([][]int, error) {
	texts := make([]string, len(toks))
	for i, t := range toks {
		texts[i] = t.Text
		if wrap != nil {
			texts[i] = wrap(t.Text)
		}
	}
	return tokenizeTexts(ctx, tk, texts, parseSpecial)
}

func tokenizeTexts(ctx context.Context, tk Tokenizer, texts []string, parseSpecial bool) ([][]int, error) {
	out := make([][]int, 0, len(texts))
	for lo := 0; lo < len(texts); {
		hi, size := lo, 0
		for hi < len(texts) && (hi == lo || size+len(texts[hi]) <= bytesPerRequest) {
			size += len(texts[hi]) + 8
			hi++
		}
		got, err := tk.TokenizeEach(ctx, texts[lo:hi], parseSpecial)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		lo = hi
	}
	return out, nil
}

// Summary is one line for loopd's log.
func (v *Vocabulary) Summary() string {
	return fmt.Sprintf("model %s: %d tokens, of which %d control and %d user-defined are neutralised in untrusted text (with the fixed floor, %d markers; %d whitespace-only skipped); learnt in %s",
		v.Model, v.NVocab, len(v.Control), len(v.UserDefined), v.Set.Len(), len(v.Skipped), v.Took.Round(time.Millisecond))
}

// Error is a failed check: the request is not sent.
type Error struct{ What string }

func (e *Error) Error() string { return e.What + "; " + runbook.See("prompt-check-failed") }
