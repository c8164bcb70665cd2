package egress

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"boxmaker/policy"
)

// The replacer's writes, by issue 29's class 2: what it passes on, and
// when, depends on lengths alone (and on where the stream has a byte no
// value can hold, which whoever wrote the stream chose), never on whether
// the bytes it holds back begin the value.

// writeLog records every write's bytes.
type writeLog struct{ writes []string }

func (l *writeLog) Write(p []byte) (int, error) {
	l.writes = append(l.writes, string(p))
	return len(p), nil
}

// flushMark stands for the flush in a list of writes.
const flushMark = "<flush>"

// cutSizes cycles sizes over a stream of n bytes; 0 is an empty write.
func cutSizes(n int, sizes []int) []int {
	var out []int
	for i, left := 0, n; left > 0; i++ {
		k := min(sizes[i%len(sizes)], left)
		out = append(out, k)
		left -= k
	}
	return out
}

// replacerLog is what a replacer writes for data cut at sizes, flushMark
// before what the flush writes.
func replacerLog(t testing.TB, old, new, data []byte, sizes []int) []string {
	l := &writeLog{}
	r := testReplacer(l, old, new)
	at := 0
	for _, n := range cutSizes(len(data), sizes) {
		if k, err := r.Write(data[at : at+n]); err != nil || k != n {
			t.Fatalf("Write = %d, %v; want %d", k, err, n)
		}
		at += n
	}
	l.writes = append(l.writes, flushMark)
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	return l.writes
}

// lengthOracle is what a replacer must write, computed naively from the
// rule: after the stream's first n bytes it has passed on all but the
// last len(old)-1 of them, or more: up to the end of the last whole
// occurrence, or past the last byte no value can hold (when old holds
// none). Each write is the replacement of what was newly passed on, and
// there is none when that is empty.
func lengthOracle(old, new, data []byte, sizes []int) []string {
	var ends []int // where the occurrences end, leftmost first, none overlapping
	for i := 0; i+len(old) <= len(data); {
		if bytes.Equal(data[i:i+len(old)], old) {
			ends = append(ends, i+len(old))
			i += len(old)
		} else {
			i++
		}
	}
	stops := policy.BadHeaderByte(old) < 0
	var out []string
	done, n := 0, 0
	for _, size := range cutSizes(len(data), sizes) {
		n += size
		e := max(done, n-(len(old)-1))
		for _, end := range ends {
			if end <= n {
				e = max(e, end)
			}
		}
		for p := 0; stops && p < n; p++ {
			if policy.BadHeaderByte(data[p:p+1]) == 0 {
				e = max(e, p+1)
			}
		}
		if piece := bytes.ReplaceAll(data[done:e], old, new); len(piece) > 0 {
			out = append(out, string(piece))
		}
		done = e
	}
	out = append(out, flushMark)
	if piece := bytes.ReplaceAll(data[done:], old, new); len(piece) > 0 {
		out = append(out, string(piece))
	}
	return out
}

// TestReplacerWritesByLengthAlone: named cases, then random needles,
// streams and cuttings, some with the bytes that stop a value, some with
// a needle that holds one.
func TestReplacerWritesByLengthAlone(t *testing.T) {
	for _, tc := range []struct {
		name, old, data string
		sizes           []int
		want            []string
	}{
		{"a right start is held as long as a wrong one", "abcdef", "xxabcd", []int{6}, []string{"x", flushMark, "xabcd"}},
		{"a wrong start", "abcdef", "xxabce", []int{6}, []string{"x", flushMark, "xabce"}},
		{"a whole occurrence goes at once", "abcdef", "xabcdef", []int{7}, []string{"xX", flushMark}},
		{"after an occurrence, what is left is held", "abcdef", "abcdefabcd", []int{10}, []string{"X", flushMark, "abcd"}},
		{"a line end goes with its line", "abcdef", "ab\ncd", []int{5}, []string{"ab\n", flushMark, "cd"}},
		{"a right start, then a line end", "abcdef", "abc\n", []int{4}, []string{"abc\n", flushMark}},
		{"NUL and DEL stop too", "abcdef", "a\x00b\x7fc", []int{5}, []string{"a\x00b\x7f", flushMark, "c"}},
		{"tab does not stop", "abcdef", "ab\tcd", []int{5}, []string{flushMark, "ab\tcd"}},
		{"a needle with a line end: nothing stops", "ab\ncd", "xx\nyy", []int{5}, []string{"x", flushMark, "x\nyy"}},
		{"byte by byte", "abc", "zabcz", []int{1}, []string{"z", "X", flushMark, "z"}},
	} {
		got := replacerLog(t, []byte(tc.old), []byte("X"), []byte(tc.data), tc.sizes)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: writes %q, want %q", tc.name, got, tc.want)
		}
		if o := lengthOracle([]byte(tc.old), []byte("X"), []byte(tc.data), tc.sizes); !slices.Equal(o, tc.want) {
			t.Errorf("%s: the oracle says %q, the table %q", tc.name, o, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(29, 5))
	pick := func(n int, alphabet string) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	for i := 0; i < 20000; i++ {
		alphabet := "ab"[:1+rng.IntN(2)] + "c"[:rng.IntN(2)]
		old := pick(1+rng.IntN(7), alphabet)
		if rng.IntN(8) == 0 {
			old[rng.IntN(len(old))] = '\n'
		}
		new := pick(rng.IntN(8), "xyab\n")
		data := pick(rng.IntN(80), alphabet+"\n\x00"[:rng.IntN(3)])
		for k := rng.IntN(3); k > 0; k-- {
			at := rng.IntN(len(data) + 1)
			data = append(data[:at:at], append(bytes.Clone(old), data[at:]...)...)
		}
		sizes := []int{1 + rng.IntN(9)}
		for k := rng.IntN(4); k > 0; k-- {
			sizes = append(sizes, rng.IntN(9))
		}
		got := replacerLog(t, old, new, data, sizes)
		if want := lengthOracle(old, new, data, sizes); !slices.Equal(got, want) {
			t.Fatalf("old %q new %q data %q sizes %v: writes %q, want %q", old, new, data, sizes, got, want)
		}
	}
}

// FuzzReplacerWritesByLengthAlone: any needle, stream and cutting give
// the oracle's writes.
func FuzzReplacerWritesByLengthAlone(f *testing.F) {
	f.Add([]byte("sk-SECRET"), []byte("P"), []byte("a sk-SEC\nb sk-SECRET sk-SE"), []byte{1, 2, 3})
	f.Add([]byte("aab"), []byte("aab"), []byte("aaaabaab"), []byte{0, 1})
	f.Add([]byte("a\x00"), []byte(""), []byte("a\x00a\x00\x00a"), []byte{2})
	f.Fuzz(func(t *testing.T, old, new, data, cuts []byte) {
		if len(old) == 0 || len(old) > 64 || len(data) > 4096 {
			return
		}
		sizes := []int{1}
		for _, c := range cuts {
			sizes = append(sizes, int(c%17))
		}
		got := replacerLog(t, old, new, data, sizes)
		if want := lengthOracle(old, new, data, sizes); !slices.Equal(got, want) {
			t.Fatalf("writes %q, want %q", got, want)
		}
	})
}

// TestReplacerHoldsBackAFixedTail: until the stream ends, the last
// len(old)-1 bytes stay behind, whether or not they begin an occurrence;
// less only after a whole occurrence or a byte that stops a value.
func TestReplacerHoldsBackAFixedTail(t *testing.T) {
	var out bytes.Buffer
	r := testReplacer(&out, []byte("abcabd"), []byte("X"))
	for _, step := range []struct{ in, out string }{
		{"zz", ""}, {"ab", ""}, {"c", ""}, {"ab", "zz"}, {"c", "zza"}, {"abd!", "zzabcX"},
		{"zzzzzz", "zzabcX!z"}, {"abcabd", "zzabcX!zzzzzzX"}, {"ab\n", "zzabcX!zzzzzzXab\n"},
	} {
		r.Write([]byte(step.in))
		if out.String() != step.out {
			t.Fatalf("after %q: passed on %q, want %q", step.in, out.String(), step.out)
		}
	}
	for _, tail := range []string{"abcab", "zzzzz", "abcaz", "bcabd"} {
		var out bytes.Buffer
		r := testReplacer(&out, []byte("abcabd"), []byte("X"))
		r.Write([]byte("0123456789" + tail))
		if out.String() != "0123456789" {
			t.Errorf("after %q: passed on %q, want all but the last 5 bytes", tail, out.String())
		}
		r.Flush()
		if out.String() != "0123456789"+tail {
			t.Errorf("after %q and a flush: %q", tail, out.String())
		}
	}
}

// TestStopBytes: the bytes after which nothing is held back are exactly
// those no header value, and so no secret's value, can hold
// (policy.BadHeaderByte): control characters but tab, and DEL.
func TestStopBytes(t *testing.T) {
	old := []byte("sk-SECRET")
	var stops []byte
	for c := range 256 {
		var out bytes.Buffer
		r := testReplacer(&out, old, []byte("X"))
		r.Write([]byte{'a', 'b', byte(c)})
		stop := policy.BadHeaderByte([]byte{byte(c)}) == 0
		switch {
		case stop && out.String() != string([]byte{'a', 'b', byte(c)}):
			t.Errorf("byte %#02x stops a value, yet the replacer passed on %q of %q", c, out.String(), []byte{'a', 'b', byte(c)})
		case !stop && out.Len() != 0:
			t.Errorf("byte %#02x does not stop a value, yet the replacer passed on %q before the end of the stream", c, out.String())
		}
		if stop {
			stops = append(stops, byte(c))
		}
	}
	if want := append(bytes.Clone([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08")), append([]byte("\x0a\x0b\x0c\x0d\x0e\x0f"),
		[]byte("\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f")...)...); !bytes.Equal(stops, want) {
		t.Errorf("stop bytes %q, want %q", stops, want)
	}
	// A needle that holds such a byte is held back whatever follows.
	var out bytes.Buffer
	r := testReplacer(&out, []byte("a\nb"), []byte("X"))
	r.Write([]byte("xxa\n"))
	if out.String() != "xx" {
		t.Errorf("a needle with a line end: passed on %q, want %q", out.String(), "xx")
	}
	r.Write([]byte("b"))
	r.Flush()
	if out.String() != "xxX" {
		t.Errorf("a needle with a line end: %q, want %q", out.String(), "xxX")
	}
}
