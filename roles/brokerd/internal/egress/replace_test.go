package egress

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// testReplacer is a replacer as the proxy makes one.
func testReplacer(w io.Writer, old, new []byte) *replacer {
	return newReplacer(w, old, new)
}

// replaceInChunks runs data through a replacer cut at the given sizes
// (cycled; 0 means an empty write), then flushes.
func replaceInChunks(t testing.TB, data, old, new []byte, sizes []int) []byte {
	t.Helper()
	var out bytes.Buffer
	r := testReplacer(&out, old, new)
	for i, rest := 0, data; len(rest) > 0; i++ {
		n := len(rest)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(rest))
		}
		if k, err := r.Write(rest[:n]); err != nil || k != n {
			t.Fatalf("Write = %d, %v; want %d", k, err, n)
		}
		rest = rest[n:]
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestReplacerCases(t *testing.T) {
	old, new := []byte("sk-SECRET"), []byte("PLACEHOLDER-PLACEHOLDER")
	for _, tc := range []struct {
		name  string
		data  string
		sizes []int
	}{
		{"whole", "a sk-SECRET b sk-SECRETsk-SECRET c", nil},
		{"bytewise", "a sk-SECRET b sk-SECRETsk-SECRET c", []int{1}},
		{"straddling every boundary", "xxsk-SECRETyy", []int{3, 4, 2, 5}},
		{"a prefix at the end", "ends with sk-SEC", []int{2}},
		{"a prefix, then not", "sk-SECsk-SECRET", []int{6, 1}},
		{"overlapping prefixes", "sk-sk-sk-SECRET", []int{3}},
		{"empty writes", "sk-SECRET", []int{0, 4, 0, 5}},
		{"nothing", "", nil},
	} {
		got := replaceInChunks(t, []byte(tc.data), old, new, tc.sizes)
		if want := bytes.ReplaceAll([]byte(tc.data), old, new); !bytes.Equal(got, want) {
			t.Errorf("%s: %q, want %q", tc.name, got, want)
		}
	}
}

// TestReplacerMatchesReplaceAll is the property: for random needles,
// texts and cuttings, the stream's output is bytes.ReplaceAll's. The
// alphabet is small so that occurrences, near-misses and overlaps are
// common.
func TestReplacerMatchesReplaceAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int, alphabet string) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	for i := 0; i < 20000; i++ {
		alphabet := "ab"[:1+rng.IntN(2)] + "c"[:rng.IntN(2)]
		old := randBytes(1+rng.IntN(6), alphabet)
		new := randBytes(rng.IntN(8), "xyab")
		data := randBytes(rng.IntN(80), alphabet)
		// Plant occurrences too.
		for k := rng.IntN(3); k > 0; k-- {
			at := rng.IntN(len(data) + 1)
			data = append(data[:at:at], append(bytes.Clone(old), data[at:]...)...)
		}
		var sizes []int
		for k := 1 + rng.IntN(5); k > 0; k-- {
			sizes = append(sizes, rng.IntN(9))
		}
		if slicesAllZero(sizes) {
			sizes = append(sizes, 1)
		}
		got := replaceInChunks(t, data, old, new, sizes)
		if want := bytes.ReplaceAll(data, old, new); !bytes.Equal(got, want) {
			t.Fatalf("old %q new %q data %q sizes %v: %q, want %q", old, new, data, sizes, got, want)
		}
	}
}

func slicesAllZero(s []int) bool {
	for _, n := range s {
		if n != 0 {
			return false
		}
	}
	return true
}

// FuzzReplacer: any needle, text and cutting give bytes.ReplaceAll's
// output.
func FuzzReplacer(f *testing.F) {
	f.Add([]byte("sk-SECRET"), []byte("P"), []byte("a sk-SECRET b sk-SEsk-SECRET"), []byte{1, 2, 3})
	f.Add([]byte("aab"), []byte("aab"), []byte("aaaabaab"), []byte{0, 1})
	f.Add([]byte("x"), []byte(""), []byte("xxxx"), []byte{})
	f.Fuzz(func(t *testing.T, old, new, data, cuts []byte) {
		if len(old) == 0 {
			return
		}
		sizes := make([]int, 0, len(cuts)+1)
		for _, c := range cuts {
			sizes = append(sizes, int(c%17))
		}
		sizes = append(sizes, 1) // never only empty writes
		got := replaceInChunks(t, data, old, new, sizes)
		if want := bytes.ReplaceAll(data, old, new); !bytes.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}
