package redact

import (
	"bytes"
	"slices"
	"sync"
	"unicode/utf8"
)

// bufs holds the copies findEncoded makes, so that a 1 MiB output does not
// cost a 1 MiB allocation, cleared, each time.
var bufs sync.Pool

// markBufs holds strip's marks, for the same reason.
var markBufs sync.Pool

func getMarks(n int) *[]int {
	if b, _ := markBufs.Get().(*[]int); b != nil && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]int, n)
	return &b
}

func getBuf(n int) *[]byte {
	if b, _ := bufs.Get().(*[]byte); b != nil && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// span is a range of the text, [start, end).
type span struct{ start, end int }

// find returns every place in t one of the forms occurs that does not lie
// inside a marker, as ranges of t that are sorted and do not overlap.
func (st *state) find(t []byte) []span {
	var spans []span
	if st.inRaw != nil {
		st.inRaw.each(t, func(_, s int) { spans = add(spans, span{s, s + len(st.exact.pat)}) })
	}
	spans = append(spans, st.findEncoded(t)...)
	if len(spans) == 0 {
		return nil
	}
	if st.markers {
		if spans = st.aroundMarkers(t, spans); len(spans) == 0 {
			return nil
		}
	}
	for i := range spans {
		spans[i] = widen(t, spans[i])
	}
	return merge(spans)
}

// findEncoded finds the encoded forms in t with its whitespace removed, and
// maps each occurrence back to t from its first character to its last, so
// that the whitespace inside it is covered and the whitespace around it is
// not.
func (st *state) findEncoded(t []byte) []span {
	if len(st.forms) == 0 {
		return nil
	}
	bp := getBuf(len(t))
	defer bufs.Put(bp)
	mp := getMarks(len(t)/32 + 1)
	defer markBufs.Put(mp)
	s := (*bp)[:strip(t, *bp, *mp)]
	var in []span // in the stripped copy
	found := func(f *form, text []byte, st int) {
		end := st + len(f.m.pat)
		for _, tail := range f.tails {
			if bytes.HasPrefix(text[end:], tail) {
				end += len(tail)
				break
			}
		}
		in = add(in, span{st, end}) // end is one past the last character
	}
	st.inStripped.each(s, func(i, start int) { found(&st.forms[st.stripped[i]], s, start) })
	if len(st.inFolded) > 0 {
		// The folded copy, only for a short form found in any case that
		// has no piece without letters to anchor on.
		lp := getBuf(len(s))
		defer bufs.Put(lp)
		l := (*lp)[:len(s)]
		for k, c := range s {
			l[k] = lower[c]
		}
		for _, i := range st.inFolded {
			f := &st.forms[i]
			f.m.each(l, func(start int) { found(f, l, start) })
		}
	}
	if len(in) == 0 {
		return nil
	}
	// Map stripped positions back to t in one walk, over the positions
	// sorted.
	pos := make([]int, 0, 2*len(in))
	for _, sp := range in {
		pos = append(pos, sp.start, sp.end-1)
	}
	slices.Sort(pos)
	pos = slices.Compact(pos)
	raw := rawPositions(t, *mp, pos)
	at := func(x int) int {
		p, _ := slices.BinarySearch(pos, x)
		return raw[p]
	}
	out := make([]span, len(in))
	for i, sp := range in {
		out[i] = span{at(sp.start), at(sp.end-1) + 1}
	}
	return out
}

// rawPositions returns where in t each of the sorted positions of its
// stripped copy came from: strip's marks say which 32 bytes of t hold it,
// and a walk of at most 32 bytes finds it there.
func rawPositions(t []byte, marks []int, pos []int) []int {
	raw := make([]int, len(pos))
	for p, x := range pos {
		// The last block that starts with at most x bytes kept before it.
		b, _ := slices.BinarySearch(marks, x+1)
		i, k := 32*(b-1), marks[b-1]
		for keep[t[i]] == 0 || k < x {
			k += keep[t[i]]
			i++
		}
		raw[p] = i
	}
	return raw
}

// aroundMarkers drops the occurrences that lie inside a marker (a value
// such as "secret" or "[" is in every marker, and the marker's text shows
// nothing of the value), and widens the others over any marker they
// overlap, so that a marker is never cut.
func (st *state) aroundMarkers(t []byte, spans []span) []span {
	var ms []span
	mk := []byte(st.marker)
	for i := 0; ; {
		k := bytes.Index(t[i:], mk)
		if k < 0 {
			break
		}
		// Markers cannot overlap one another: '[' and ']' occur once each.
		ms = append(ms, span{i + k, i + k + len(mk)})
		i += k + len(mk)
	}
	if len(ms) == 0 {
		return spans
	}
	out := spans[:0]
	for _, sp := range spans {
		// The first marker ending after sp starts.
		j, _ := slices.BinarySearchFunc(ms, sp.start, func(m span, s int) int { return m.end - 1 - s })
		if j < len(ms) && ms[j].start <= sp.start && sp.end <= ms[j].end {
			continue
		}
		for ; j < len(ms) && ms[j].start < sp.end; j++ {
			sp.start, sp.end = min(sp.start, ms[j].start), max(sp.end, ms[j].end)
		}
		out = append(out, sp)
	}
	return out
}

// widen moves sp's ends outwards to the edges of any valid UTF-8 character
// they cut, so that what stays of valid UTF-8 text is valid UTF-8. A binary
// value can match inside a character (its first byte a continuation byte).
func widen(t []byte, sp span) span {
	for q := sp.start - 1; q >= 0 && q >= sp.start-3; q-- {
		if utf8.RuneStart(t[q]) {
			if r, size := utf8.DecodeRune(t[q:]); (r != utf8.RuneError || size > 1) && q+size > sp.start {
				sp.start = q
			}
			break
		}
	}
	for q := sp.end - 1; q >= 0 && q >= sp.end-3; q-- {
		if utf8.RuneStart(t[q]) {
			if r, size := utf8.DecodeRune(t[q:]); (r != utf8.RuneError || size > 1) && q+size > sp.end {
				sp.end = q + size
			}
			break
		}
	}
	return sp
}

// add appends sp to spans, or joins it to the last when the two overlap:
// one pattern's occurrences come in order, so a text full of them (a value
// "aaaa" in a run of a's) makes one span, not one per position. Joining
// early gives what merge would: overlapping occurrences become one marker
// whatever the markers and UTF-8 around them do (see find).
func add(spans []span, sp span) []span {
	if n := len(spans); n > 0 && sp.start < spans[n-1].end && spans[n-1].start <= sp.start {
		spans[n-1].end = max(spans[n-1].end, sp.end)
		return spans
	}
	return append(spans, sp)
}

// merge sorts spans and joins those that overlap.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// replace writes t with every span replaced by the marker.
func (st *state) replace(t []byte, spans []span) []byte {
	out := make([]byte, 0, len(t)+len(spans)*len(st.marker))
	at := 0
	for _, sp := range spans {
		out = append(out, t[at:sp.start]...)
		out = append(out, st.marker...)
		at = sp.end
	}
	return append(out, t[at:]...)
}
