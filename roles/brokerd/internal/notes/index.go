package notes

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"boxmaker/wire"
)

// The tokenizer: a token is a maximal run of Unicode letters and digits
// (unicode.IsLetter, unicode.IsDigit), each rune lower-cased on its own with
// unicode.ToLower (the simple, one-rune mapping, so a token stays a run of
// letters and digits). Everything else (spaces, punctuation, symbols,
// combining marks, control characters) separates tokens. The same function
// cuts notes and queries, so a query matches exactly the words a note holds.
func eachToken(s string, f func(tok string)) {
	start := -1
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f(lower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		f(lower(s[start:]))
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// lower lower-cases a run without allocating when it is already lower-case
// ASCII (most words).
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return strings.Map(unicode.ToLower, w)
		}
	}
	return w
}

// validToken reports whether t is something eachToken can produce: the
// index file's parser accepts only such terms.
func validToken(t string) bool {
	if t == "" || !utf8.ValidString(t) {
		return false
	}
	for _, r := range t {
		if !isWordRune(r) || unicode.ToLower(r) != r {
			return false
		}
	}
	return true
}

// queryTokens is the distinct tokens of a query, in order of first use.
func queryTokens(q string) []string {
	var out []string
	eachToken(q, func(t string) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	})
	return out
}

// titleWeight is how many text occurrences one title occurrence is worth.
const titleWeight = 5

// stamp is what the match check compares between the index and the notes
// directory: a file's size and modification time in nanoseconds.
type stamp struct{ size, mtime int64 }

// doc is one indexed note. terms lists its distinct term numbers, so that
// removing it touches only its own postings.
type doc struct {
	id      string
	st      stamp
	written wire.Timestamp
	terms   []uint32
}

// posting: note slot doc holds the term title times in its title and text
// times in its text. A note is at most 16 KiB, so counts fit in 16 bits.
type posting struct {
	doc         uint32
	title, text uint16
}

// index is the search index in memory: for each term, the notes holding it,
// by slot, in increasing order. Titles and texts are not kept (see
// docs/decisions.md): Search ranks from the counts and reads the files of
// the notes it returns.
type index struct {
	docs     []*doc // by slot; nil where a note was removed
	byID     map[string]uint32
	vocab    map[string]uint32
	terms    []string
	postings [][]posting
	damaged  map[string]stamp  // note files that exist but do not decode
	counts   map[string][2]int // add's scratch space
}

func newIndex() *index {
	return &index{byID: map[string]uint32{}, vocab: map[string]uint32{}, damaged: map[string]stamp{}}
}

// termCounts counts each distinct token of title and text into c, emptied
// first (add reuses one map: a rebuild counts 10,000 notes).
func termCounts(c map[string][2]int, title, text string) map[string][2]int {
	clear(c)
	eachToken(title, func(t string) { v := c[t]; v[0]++; c[t] = v })
	eachToken(text, func(t string) { v := c[t]; v[1]++; c[t] = v })
	return c
}

// add indexes a note under a new slot, the highest, so every posting list
// stays in slot order by appending.
func (x *index) add(id string, st stamp, written wire.Timestamp, title, text string) {
	x.remove(id)
	slot := uint32(len(x.docs))
	d := &doc{id: id, st: st, written: written}
	if x.counts == nil {
		x.counts = map[string][2]int{}
	}
	for t, n := range termCounts(x.counts, title, text) {
		tid, ok := x.vocab[t]
		if !ok {
			tid = uint32(len(x.terms))
			t = strings.Clone(t) // not a slice of the note's text, which is not kept
			x.vocab[t] = tid
			x.terms = append(x.terms, t)
			x.postings = append(x.postings, nil)
		}
		x.postings[tid] = append(x.postings[tid], posting{slot, uint16(min(n[0], 0xffff)), uint16(min(n[1], 0xffff))})
		d.terms = append(d.terms, tid)
	}
	x.docs = append(x.docs, d)
	x.byID[id] = slot
	delete(x.damaged, id)
}

// remove drops note id from the index; it reports whether it was there.
func (x *index) remove(id string) bool {
	slot, ok := x.byID[id]
	if !ok {
		return false
	}
	for _, tid := range x.docs[slot].terms {
		p := x.postings[tid]
		if i, found := slices.BinarySearchFunc(p, slot, func(e posting, s uint32) int { return cmp.Compare(e.doc, s) }); found {
			x.postings[tid] = slices.Delete(p, i, i+1)
		}
	}
	x.docs[slot] = nil
	delete(x.byID, id)
	if len(x.docs) > 64 && len(x.docs) > 2*len(x.byID) {
		x.compact()
	}
	return true
}

// compact renumbers the slots 0..n-1 in their order, so that replacing notes
// again and again does not grow the slot table without bound. Renumbering
// keeps the order, so every posting list stays sorted.
func (x *index) compact() {
	renum := make([]uint32, len(x.docs))
	live := x.docs[:0:0]
	for s, d := range x.docs {
		if d != nil {
			renum[s] = uint32(len(live))
			x.byID[d.id] = uint32(len(live))
			live = append(live, d)
		}
	}
	x.docs = live
	for tid, p := range x.postings {
		for i := range p {
			p[i].doc = renum[p[i].doc]
		}
		x.postings[tid] = p
	}
}

// hit is a matching note and its score.
type hit struct {
	d     *doc
	score int
}

// search returns every note holding all the tokens, best first: the higher
// score (title occurrences weigh titleWeight, text occurrences one, summed
// over the tokens), then the newer note, then the smaller id, so the order
// is total and a query always gives the same answer.
func (x *index) search(tokens []string) []hit {
	lists := make([][]posting, 0, len(tokens))
	for _, t := range tokens {
		tid, ok := x.vocab[t]
		if !ok || len(x.postings[tid]) == 0 {
			return nil
		}
		lists = append(lists, x.postings[tid])
	}
	// Walk the shortest list and look each of its notes up in the others.
	slices.SortFunc(lists, func(a, b []posting) int { return cmp.Compare(len(a), len(b)) })
	var hits []hit
	pos := make([]int, len(lists))
next:
	for _, p := range lists[0] {
		score := titleWeight*int(p.title) + int(p.text)
		for k := 1; k < len(lists); k++ {
			l := lists[k]
			// The lists are sorted by slot and so is the walk: search
			// forward from where the previous note was found.
			i, found := slices.BinarySearchFunc(l[pos[k]:], p.doc, func(e posting, s uint32) int { return cmp.Compare(e.doc, s) })
			pos[k] += i
			if !found {
				continue next
			}
			q := l[pos[k]]
			score += titleWeight*int(q.title) + int(q.text)
		}
		hits = append(hits, hit{x.docs[p.doc], score})
	}
	slices.SortFunc(hits, compareHits)
	return hits
}

func compareHits(a, b hit) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := cmp.Compare(b.d.written, a.d.written); c != 0 {
		return c
	}
	return strings.Compare(a.d.id, b.d.id)
}

// newestFirst orders notes for List: newer first, then by id.
func newestFirst(a, b *doc) int {
	if c := cmp.Compare(b.written, a.written); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}
