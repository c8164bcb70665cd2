package egress

import (
	"bytes"
	"io"

	"boxmaker/policy"
)

// replacer is a writer that passes what it is given on to w with every
// occurrence of old replaced by new, exactly as bytes.ReplaceAll would
// over the whole stream (leftmost matches, not overlapping), however the
// stream is cut into writes.
//
// What it passes on, and when, must not tell whoever wrote the stream
// whether the bytes it holds back begin old (issue 29, class 2: a tool
// that has the secret's host echo a guess would learn how much of its
// guess is right). So it holds back a fixed tail of len(old)-1 bytes,
// whatever they are, and less only after a whole occurrence (which the
// output shows anyway) or after a stop byte: a control character other
// than tab, or DEL (policy.BadHeaderByte), which no secret's value can
// hold, so no occurrence spans one. A streamed response of lines still
// reaches the tool line by line. Flush writes the tail at the end.
type replacer struct {
	w        io.Writer
	old, new []byte
	stops    bool   // old holds no stop byte, so none can be inside an occurrence
	pending  []byte // the held-back tail
	out      []byte // reused for what one Write passes on
}

// newReplacer needs a non-empty old.
func newReplacer(w io.Writer, old, new []byte) *replacer {
	return &replacer{w: w, old: old, new: new, stops: policy.BadHeaderByte(old) < 0}
}

// Write replaces and passes on, in one write to w, everything in p but
// the tail it holds back. It reports len(p) when w took what it was
// given.
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
	// No occurrence starts before len(buf)-len(old)+1 any more: pass on
	// all but the last len(old)-1 bytes, and up to the last stop byte
	// after that, by lengths and stop bytes alone.
	end := max(i, len(buf)-len(r.old)+1)
	if r.stops {
		for tail := buf[end:]; ; {
			k := policy.BadHeaderByte(tail)
			if k < 0 {
				break
			}
			end += k + 1
			tail = tail[k+1:]
		}
	}
	out = append(out, buf[i:end]...)
	// buf may share its array with pending: copy the tail to the front
	// before anything else uses it.
	r.pending = append(r.pending[:0], buf[end:]...)
	r.out = out
	if len(out) > 0 {
		if _, err := r.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
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
