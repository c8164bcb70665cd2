package prompt

import (
	"bytes"
	"testing"
)

// A request moved to another slot is, byte for byte and hash for hash,
// the request built for that slot from the start, at every length; bodies
// handed out before the move keep their bytes; appends after it go on.
func TestSetSlot(t *testing.T) {
	recs := history()
	for _, to := range []uint32{2, 10, 0, 123456} {
		r := New(2, prefix)
		r.Append(recs[0])
		r.Append(recs[1])
		before := r.Parts()
		was := append([]byte(nil), before[0]...)
		r.Hash()
		r.SetSlot(to)
		if r.Slot() != to {
			t.Fatalf("Slot() = %d, want %d", r.Slot(), to)
		}
		if !bytes.Equal(before[0], was) {
			t.Fatalf("moving to slot %d changed a body already handed out", to)
		}
		for _, rec := range recs[2:] {
			r.Append(rec)
		}
		fresh := New(to, prefix)
		for _, rec := range recs {
			fresh.Append(rec)
		}
		for n := 0; n <= len(recs); n++ {
			if got, want := r.BodyAt(n), fresh.BodyAt(n); !bytes.Equal(got, want) {
				t.Fatalf("slot %d, %d records:\n%s\nwant\n%s", to, n, got, want)
			}
		}
		if r.Hash() != fresh.Hash() || !bytes.Equal(bytes.Join(r.Parts(), nil), fresh.Body()) {
			t.Fatalf("slot %d: hash or parts differ from a fresh request", to)
		}
		if got, want := r.SummaryBody("sum up", 10), fresh.SummaryBody("sum up", 10); !bytes.Equal(got, want) {
			t.Fatalf("slot %d: summary body\n%s\nwant\n%s", to, got, want)
		}
	}
}
