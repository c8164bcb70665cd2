package specials

import (
	"context"
	"slices"
	"sort"
	"unicode/utf8"
)

// userDefined picks, among cands (tokens that tokenize to themselves with
// and without special parsing, two characters or more), those the tokenizer
// cuts out of the text before BPE: llama.cpp's user-defined tokens. The
// server shows no token attributes, so this goes by behaviour:
//
//   - A witness: if an ordinary token t contains the text of c and t's own
//     text tokenizes to t alone, c was not cut out of it, so c is ordinary.
//     (A cut-out c would split t's text: tokenize(t) would hold c.) Only a
//     witness known to be ordinary counts, since a longer user-defined
//     token containing c is also matched whole; so tokens are decided
//     longest first, and each ordinary one is a witness for its substrings.
//   - Contexts, for a token no ordinary token contains: surrounded by each
//     of contexts, an ordinary token merges with its neighbours somewhere;
//     a cut-out one stays whole in all of them.
//
// A user-defined token is never taken for ordinary by either test, so none
// is missed; an ordinary token that passes both is neutralised needlessly
// (the figures are in docs/decisions.md).
func userDefined(ctx context.Context, tk Tokenizer, cands []Token) ([]Token, error) {
	idx := make(map[string]int, len(cands))
	runes := make([]int, len(cands))
	order := make([]int, len(cands))
	for i, c := range cands {
		idx[c.Text] = i
		runes[i] = utf8.RuneCountInString(c.Text)
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return runes[order[a]] > runes[order[b]] })
	witnessed := make([]bool, len(cands))
	ordinary := make([]bool, len(cands))
	for lo := 0; lo < len(order); {
		hi := lo
		for hi < len(order) && runes[order[hi]] == runes[order[lo]] {
			hi++
		}
		group := order[lo:hi]
		var test []int
		for _, i := range group {
			if witnessed[i] {
				ordinary[i] = true
			} else {
				test = append(test, i)
			}
		}
		if len(test) > 0 {
			var texts []string
			for _, i := range test {
				for _, wrap := range contexts {
					texts = append(texts, wrap(cands[i].Text))
				}
			}
			got, err := tokenizeTexts(ctx, tk, texts, false)
			if err != nil {
				return nil, err
			}
			for k, i := range test {
				for w := range contexts {
					if !slices.Contains(got[k*len(contexts)+w], cands[i].ID) {
						ordinary[i] = true
					}
				}
			}
		}
		for _, i := range group {
			if ordinary[i] {
				markSubstrings(cands[i].Text, idx, witnessed)
			}
		}
		lo = hi
	}
	var out []Token
	for i, c := range cands {
		if !ordinary[i] {
			out = append(out, c)
		}
	}
	return out, nil
}

// markSubstrings marks every candidate whose text is a proper substring of
// s, two characters or more, starting and ending on character boundaries.
func markSubstrings(s string, idx map[string]int, witnessed []bool) {
	for a := 0; a < len(s); {
		_, n := utf8.DecodeRuneInString(s[a:])
		first := a + n
		for b := first; b < len(s) || (b == len(s) && a > 0); {
			if b > first {
				if j, ok := idx[s[a:b]]; ok {
					witnessed[j] = true
				}
			}
			if b == len(s) {
				break
			}
			_, m := utf8.DecodeRuneInString(s[b:])
			b += m
		}
		a = first
	}
}
