package tinymodel

import (
	"strings"
	"unicode/utf8"
)

// A counting bound that proves a text cannot be spelled without a repeat,
// long before the search would give up. Take the positions of one
// character (the quotes of a JSON text, say), keeping one only when no single
// token can cover it together with the previous one kept. In any spelling
// each kept position lies in a different token, and the tokens differ, so
// there must be a matching from the kept positions to distinct tokens that
// can cover them (Hall's condition). {"name":"x","tool":"y",...} fails it:
// five `":` positions, and only `":"`, `":{"`, `":` and `"` fit there.

// occ is one place a token can stand in the text: bytes [at, at+n).
type occ struct{ at, n, id int }

type bound struct {
	s      string
	starts [][]cand
	maxLen int
}

type cand struct{ n, id int }

// short returns a symbol (a character of the byte-level text) whose kept
// positions (from pos on, with the used tokens gone) outnumber the tokens
// that can cover them, the number of positions and of tokens; ok is false
// when no symbol fails.
func (b *bound) short(pos int, used map[int]bool) (sym string, need, have int, ok bool) {
	seen := map[string]bool{}
	for j := pos; j < len(b.s); {
		_, size := utf8.DecodeRuneInString(b.s[j:])
		sym := b.s[j : j+size]
		j += size
		if seen[sym] {
			continue
		}
		seen[sym] = true
		if need, have := b.check(pos, sym, used); have < need {
			return sym, need, have, true
		}
	}
	return "", 0, 0, false
}

// covering lists the usable occurrences that cover position p.
func (b *bound) covering(pos, p int, used map[int]bool) []occ {
	var out []occ
	for a := max(pos, p-b.maxLen+1); a <= p; a++ {
		for _, c := range b.starts[a] {
			if a+c.n > p && !used[c.id] {
				out = append(out, occ{a, c.n, c.id})
			}
		}
	}
	return out
}

func (b *bound) check(pos int, sym string, used map[int]bool) (need, have int) {
	var kept [][]int // for each kept position, the tokens that can cover it
	last := -1
	for j := pos; j < len(b.s); j++ {
		if !strings.HasPrefix(b.s[j:], sym) {
			continue
		}
		cov := b.covering(pos, j, used)
		if last >= 0 {
			together := false
			for _, o := range cov {
				if o.at <= last {
					together = true
					break
				}
			}
			if together {
				continue
			}
		}
		ids := make([]int, 0, len(cov))
		for _, o := range cov {
			ids = append(ids, o.id)
		}
		kept = append(kept, ids)
		last = j
	}
	return len(kept), matching(kept)
}

// matching is the size of a maximum matching from the rows to distinct
// token ids (Kuhn's augmenting paths; the rows are few).
func matching(rows [][]int) int {
	owner := map[int]int{} // token -> row
	var try func(r int, seen map[int]bool) bool
	try = func(r int, seen map[int]bool) bool {
		for _, id := range rows[r] {
			if seen[id] {
				continue
			}
			seen[id] = true
			if o, taken := owner[id]; !taken || try(o, seen) {
				owner[id] = r
				return true
			}
		}
		return false
	}
	n := 0
	for r := range rows {
		if try(r, map[int]bool{}) {
			n++
		}
	}
	return n
}
