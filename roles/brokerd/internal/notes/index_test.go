package notes

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"boxmaker/wire"
)

// naiveTokens is the oracle's tokenizer, written independently of
// eachToken: split on anything that is not a letter or digit, lower-case
// rune by rune. Results are cached: the oracle cuts the same texts often.
func naiveTokens(s string) []string {
	naiveMu.Lock()
	defer naiveMu.Unlock()
	if f, ok := naiveCache[s]; ok {
		return f
	}
	f := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i := range f {
		f[i] = strings.Map(unicode.ToLower, f[i])
	}
	naiveCache[s] = f
	return f
}

var (
	naiveMu    sync.Mutex
	naiveCache = map[string][]string{}
)

// oracle scans every note: the notes holding every query word, ranked as
// Search documents it.
func oracle(notes map[string]Note, query string, limit int) []Note {
	var q []string
	for _, t := range naiveTokens(query) {
		if !slices.Contains(q, t) {
			q = append(q, t)
		}
	}
	type scored struct {
		n     Note
		score int
	}
	var all []scored
	for _, n := range notes {
		title, text := naiveTokens(n.Title), naiveTokens(n.Text)
		score, ok := 0, true
		for _, t := range q {
			a, b := count(title, t), count(text, t)
			ok = ok && a+b > 0
			score += 5*a + b
		}
		if ok {
			all = append(all, scored{n, score})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.n.Label.WrittenAt, a.n.Label.WrittenAt), strings.Compare(a.n.ID, b.n.ID))
	})
	out := []Note{}
	for _, s := range all[:min(limit, len(all))] {
		out = append(out, s.n)
	}
	return out
}

func count(ts []string, t string) (n int) {
	for _, x := range ts {
		if x == t {
			n++
		}
	}
	return n
}

// vocab is small, so that random queries match; it mixes case, Unicode and
// words that are prefixes of others (no prefix matching).
var vocab = []string{"alpha", "Alpha", "ALPHA", "beta", "gamma", "delta", "del", "café", "CAFÉ", "naïve",
	"Straße", "日本", "x1", "X1", "42", "over-the-top", "it's", "a.b", "ǅemal", "Σίσυφος", "σίσυφος"}

func randText(rng *rand.Rand, words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteString([]string{" ", "\n", ", ", "\t", "—", "\x00"}[rng.IntN(6)])
		}
		b.WriteString(vocab[rng.IntN(len(vocab))])
	}
	return b.String()
}

func randQuery(rng *rand.Rand) string {
	return randText(rng, 1+rng.IntN(3))
}

func checkOracle(t *testing.T, when string, s *Store, model map[string]Note, rng *rand.Rand) {
	t.Helper()
	for range 25 {
		q, limit := randQuery(rng), 1+rng.IntN(12)
		got, err := s.Search(q, limit)
		if err != nil {
			t.Fatalf("%s: Search(%q): %v", when, q, err)
		}
		if want := oracle(model, q, limit); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Search(%q, %d):\n got %v\nwant %v", when, q, limit, ids(got), ids(want))
		}
	}
	if s.Len() != len(model) {
		t.Fatalf("%s: Len %d, want %d", when, s.Len(), len(model))
	}
}

func ids(ns []Note) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// TestSearchMatchesOracle: random notes, then random Put, replace, Promote
// and Delete; after each step, random queries give what the oracle gives,
// and so does a store reopened from the index, and one rebuilt.
func TestSearchMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	s, notesDir, indexDir := open(t)
	model := map[string]Note{}
	put := func(id string) {
		l := label(t, wire.DataClass(1+rng.IntN(3)), rng.IntN(2) == 0, fmt.Sprintf("s%d", rng.IntN(5)), uint64(rng.IntN(20)))
		n, err := s.Put(id, randText(rng, rng.IntN(4)), randText(rng, rng.IntN(40)), l)
		if id != "" && l.Untrusted && !model[id].Untrusted() {
			if !errors.Is(err, ErrProtected) { // the guard's own tests are in put_test.go
				t.Fatalf("an untrusted replace of a trusted note: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		model[n.ID] = n
	}
	for range 60 {
		put("")
	}
	checkOracle(t, "after 60 notes", s, model, rng)
	for step := range 120 {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range model {
				if !yield(k) {
					return
				}
			}
		})
		switch op := rng.IntN(4); {
		case op == 0 || len(keys) == 0:
			put("")
		case op == 1:
			put(keys[rng.IntN(len(keys))])
		case op == 2:
			id := keys[rng.IntN(len(keys))]
			if err := s.Delete(id); err != nil {
				t.Fatal(err)
			}
			delete(model, id)
		default:
			n, err := s.Promote(keys[rng.IntN(len(keys))], "owner", wire.Timestamp(step))
			if err != nil {
				t.Fatal(err)
			}
			model[n.ID] = n
		}
		checkOracle(t, fmt.Sprintf("step %d", step), s, model, rng)
		if step%40 == 39 {
			s2, rebuilt, err := Open(notesDir, indexDir)
			if err != nil || rebuilt {
				t.Fatalf("step %d: reopen: rebuilt %v, %v", step, rebuilt, err)
			}
			checkOracle(t, fmt.Sprintf("step %d, reopened", step), s2, model, rng)
			if err := s2.Rebuild(); err != nil {
				t.Fatal(err)
			}
			checkOracle(t, fmt.Sprintf("step %d, rebuilt", step), s2, model, rng)
			s = s2
		}
	}
}

// TestIndexRebuiltWhen: each way the index can be missing, damaged or
// stale leads to a rebuild, after which Search agrees with the oracle; an
// index that matches is used as it is.
func TestIndexRebuiltWhen(t *testing.T) {
	l := label(t, wire.Private, true, "s1", 5)
	extra := Note{ID: "added-by-hand", Title: "alpha", Text: "beta alpha", Label: l}
	for _, c := range []struct {
		name    string
		change  func(t *testing.T, notesDir, idx string, model map[string]Note)
		rebuilt bool
	}{
		{"unchanged", func(*testing.T, string, string, map[string]Note) {}, false},
		{"an unrelated file added", func(t *testing.T, notesDir, _ string, _ map[string]Note) {
			write(t, filepath.Join(notesDir, "README.txt"), "not a note")
			write(t, filepath.Join(notesDir, "Upper.json"), "not a note id")
		}, false},
		{"missing", func(t *testing.T, _, idx string, _ map[string]Note) { rm(t, idx) }, true},
		{"empty", func(t *testing.T, _, idx string, _ map[string]Note) { write(t, idx, "") }, true},
		{"truncated", func(t *testing.T, _, idx string, _ map[string]Note) {
			b := read(t, idx)
			write(t, idx, string(b[:len(b)*2/3]))
		}, true},
		{"a flipped byte", func(t *testing.T, _, idx string, _ map[string]Note) {
			b := read(t, idx)
			b[len(b)-5] ^= 0x01
			write(t, idx, string(b))
		}, true},
		{"another version", func(t *testing.T, _, idx string, _ map[string]Note) {
			write(t, idx, strings.Replace(string(read(t, idx)), "index 1\n", "index 2\n", 1))
		}, true},
		{"a note added behind its back", func(t *testing.T, notesDir, _ string, model map[string]Note) {
			b, err := encodeNote(extra)
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(notesDir, extra.ID+".json"), string(b))
			model[extra.ID] = extra
		}, true},
		{"a note removed behind its back", func(t *testing.T, notesDir, _ string, model map[string]Note) {
			id := slices.Min(slices.Collect(func(yield func(string) bool) {
				for k := range model {
					yield(k)
				}
			}))
			rm(t, filepath.Join(notesDir, id+".json"))
			delete(model, id)
		}, true},
		{"a note rewritten behind its back", func(t *testing.T, notesDir, _ string, model map[string]Note) {
			id := slices.Max(slices.Collect(func(yield func(string) bool) {
				for k := range model {
					yield(k)
				}
			}))
			n := model[id]
			n.Text = "gamma gamma gamma"
			b, _ := encodeNote(n)
			write(t, filepath.Join(notesDir, id+".json"), string(b))
			model[id] = n
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			s, notesDir, indexDir := open(t)
			model := map[string]Note{}
			for range 30 {
				n, err := s.Put("", randText(rng, 2), randText(rng, 20)+" alpha", l)
				if err != nil {
					t.Fatal(err)
				}
				model[n.ID] = n
			}
			idx := filepath.Join(indexDir, indexName)
			c.change(t, notesDir, idx, model)
			s2, rebuilt, err := Open(notesDir, indexDir)
			if err != nil || rebuilt != c.rebuilt {
				t.Fatalf("Open: rebuilt %v, want %v; %v", rebuilt, c.rebuilt, err)
			}
			checkOracle(t, c.name, s2, model, rng)
			if got, want := oracle(model, "alpha", 1000), mustSearch(t, s2, "alpha"); !reflect.DeepEqual(got, want) {
				t.Errorf("Search(alpha) = %v, want %v", ids(want), ids(got))
			}
			// The rebuilt index was written: the next Open uses it.
			if _, again, err := Open(notesDir, indexDir); err != nil || again {
				t.Errorf("the second Open rebuilt again (%v, %v)", again, err)
			}
		})
	}
}

func mustSearch(t *testing.T, s *Store, q string) []Note {
	t.Helper()
	got, err := s.Search(q, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rm(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"over-the-top it's a.b", []string{"over", "the", "top", "it", "s", "a", "b"}},
		{"CAFÉ café Straße", []string{"café", "café", "straße"}},
		{"x1 42\x00y\n\tz", []string{"x1", "42", "y", "z"}},
		{"日本語 ΣΊΣΥΦΟΣ", []string{"日本語", "σίσυφοσ"}},
		{"e\u0301t\u00e9", []string{"e", "té"}}, // a combining mark separates
		{"😀a😀", []string{"a"}},
	} {
		var got []string
		eachToken(c.in, func(tok string) { got = append(got, tok) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestEveryTokenIsValid: for every letter and digit, lower-casing gives a
// letter or digit that lower-cases to itself, so every token eachToken
// makes is one the index parser accepts (else the index would be rebuilt
// at every Open).
func TestEveryTokenIsValid(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !isWordRune(r) {
			continue
		}
		var got []string
		eachToken(string(r), func(tok string) { got = append(got, tok) })
		if len(got) != 1 || !validToken(got[0]) {
			t.Fatalf("rune %U gives tokens %q, not one valid token", r, got)
		}
	}
}
