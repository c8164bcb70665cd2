package egress

import (
	"bytes"
	"io"
)

// replacer is a writer that passes what it is given on to w with every
// occurrence of old replaced by new, exactly as bytes.ReplaceAll would
// over the whole stream (leftmost matches, not overlapping), however the
// stream is cut into writes. It holds back only the longest tail of what
// it was given that could still begin an occurrence, so a streamed
// response reaches the tool as it arrives. Flush writes that tail at the
// end.
type replacer struct {
	w        io.Writer
	old, new []byte
	// fail is old's KMP failure function: fail[i] is the length of the
	// longest proper prefix of old[:i+1] that is also its suffix.
	fail    []int
	pending []byte // the held-back tail, a proper prefix of old
	out     []byte // reused for what one Write passes on
}

// newReplacer needs a non-empty old, and fail, old's failure function
// (failure(old)): a proxy computes it once for its secret, not once per
// response.
func newReplacer(w io.Writer, old, new []byte, fail []int) *replacer {
	return &replacer{w: w, old: old, new: new, fail: fail}
}

// failure is KMP's failure function of pat: fail[i] is the length of the
// longest proper prefix of pat[:i+1] that is also its suffix.
func failure(pat []byte) []int {
	fail := make([]int, len(pat))
	for i, k := 1, 0; i < len(pat); i++ {
		for k > 0 && pat[i] != pat[k] {
			k = fail[k-1]
		}
		if pat[i] == pat[k] {
			k++
		}
		fail[i] = k
	}
	return fail
}

// Write replaces and passes on everything in p that can no longer be part
// of an occurrence, in one write to w. It reports len(p) when w took
// what it was given.
func (r *replacer) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	buf := append(r.pending, p...)
	out := r.out[:0]
	i := 0
	for {
		j := bytes.Index(buf[i:], r.old)
		if j < 0 {
			break
		}
		out = append(out, buf[i:i+j]...)
		out = append(out, r.new...)
		i += j + len(r.old)
	}
	// No occurrence starts before len(buf)-len(old)+1 any more; of what
	// follows, keep the longest suffix that is a prefix of old.
	keep := r.prefixSuffix(buf[max(i, len(buf)-len(r.old)+1):])
	out = append(out, buf[i:len(buf)-keep]...)
	// buf may share its array with pending: copy the tail to the front
	// before anything else uses it.
	r.pending = append(r.pending[:0], buf[len(buf)-keep:]...)
	r.out = out
	if len(out) > 0 {
		if _, err := r.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// prefixSuffix returns the length of the longest suffix of tail that is a
// proper prefix of old, by running KMP's automaton over tail: linear in
// len(tail), which is less than len(old).
func (r *replacer) prefixSuffix(tail []byte) int {
	k := 0
	for _, c := range tail {
		for k > 0 && c != r.old[k] {
			k = r.fail[k-1]
		}
		if c == r.old[k] {
			k++
		}
		if k == len(r.old) { // cannot happen after Index; stay correct anyway
			k = r.fail[k-1]
		}
	}
	return k
}

// Flush passes on the held-back tail: the stream has ended, so it is not
// the start of an occurrence.
func (r *replacer) Flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	_, err := r.w.Write(r.pending)
	r.pending = r.pending[:0]
	return err
}
