package egress_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/egress"
)

// Issue 29, class 2: nothing a tool can see of the proxy's answer may
// depend on the secret's value. The tool sends a guess in its query, the
// secret's host merely echoes it, and the proxy rewrites the value in the
// echo; a right partial guess and a wrong one of the same length must look
// the same to the tool, byte for byte, split for split.

// oracleValues are random values of random lengths, of any byte a value
// may hold (no control character but tab).
func oracleValues(n int) [][]byte {
	rng := rand.New(rand.NewPCG(29, 2))
	var out [][]byte
	for range n {
		v := make([]byte, 8+rng.IntN(33))
		for i := range v {
			v[i] = valueByte(rng)
		}
		out = append(out, v)
	}
	return out
}

func valueByte(rng *rand.Rand) byte {
	for {
		c := byte(rng.IntN(256))
		if c >= 0x20 && c != 0x7f || c == '\t' {
			return c
		}
	}
}

// guesses are the lengths of partial guesses tried on a value of n bytes.
func guessLengths(n int) []int {
	var ks []int
	for _, k := range []int{1, 2, n / 2, n - 2, n - 1} {
		if k >= 1 && k < n && !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// rightAndWrong are a right guess of v's first k bytes, and a wrong one
// that differs in its last byte alone.
func rightAndWrong(rng *rand.Rand, v []byte, k int) (right, wrong string) {
	w := bytes.Clone(v[:k])
	for w[k-1] == v[k-1] {
		w[k-1] = valueByte(rng)
	}
	return string(v[:k]), string(w)
}

// echoRig starts an echo host for secret.boxmaker.test and the hooks that
// send the proxy to it.
func echoRig(t *testing.T) (*pki, *echoHost) {
	roots := newPKI(t, "test roots")
	h := startEchoHost(t, roots.serverCert(t, "secret.boxmaker.test"))
	t.Cleanup(egress.SetTestHosts(map[string]netip.AddrPort{"secret.boxmaker.test": h.addr}, nil))
	t.Cleanup(egress.SetTestRoots(roots.pool))
	return roots, h
}

// TestEchoedGuessesLookAlike plays the attacker in the container against
// a host that streams, a host that writes once, and the replacer itself,
// over many values: for every guess length, a right guess and a wrong one
// look the same.
func TestEchoedGuessesLookAlike(t *testing.T) {
	values := oracleValues(24)
	for _, path := range []string{"/stream", "/once"} {
		t.Run(path[1:], func(t *testing.T) {
			roots, _ := echoRig(t)
			rng := rand.New(rand.NewPCG(29, 3))
			for i, v := range values {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					a := startRigProxy(t, roots, v, "secret.boxmaker.test").attacker(t)
					for _, k := range guessLengths(len(v)) {
						right, wrong := rightAndWrong(rng, v, k)
						r, w := a.ask(path, right), a.ask(path, wrong)
						want := len(echoPrefix) + k + len(echoRest)
						if path == "/once" {
							want = len(echoPrefix) + k
						}
						if r.err != "" || r.length != want || !r.kept {
							t.Fatalf("a guess of %d bytes of a %d-byte value: %v", k, len(v), r)
						}
						if !r.equal(w) {
							t.Errorf("a guess of %d bytes of a %d-byte value: the right one shows %v, a wrong one %v", k, len(v), r, w)
						}
					}
				})
			}
		})
	}
	t.Run("raw", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(29, 4))
		for _, v := range values {
			for _, k := range guessLengths(len(v)) {
				right, wrong := rightAndWrong(rng, v, k)
				cuts := [][]int{{len(echoPrefix) + k}, {1}, {3, 5, 7}}
				cuts = append(cuts, []int{1 + rng.IntN(len(v)+len(echoPrefix)), 1 + rng.IntN(8)})
				for _, sizes := range cuts {
					r := replacerWrites(v, echoPrefix+right+echoRest, sizes)
					w := replacerWrites(v, echoPrefix+wrong+echoRest, sizes)
					if !slices.Equal(r, w) {
						t.Errorf("a guess of %d bytes of a %d-byte value, cut at %v: the right one gives writes of %v, a wrong one %v", k, len(v), sizes, r, w)
					}
				}
			}
		}
	})
}

// sizeLog notes the size of every write; a flush is noted as -1.
type sizeLog struct{ sizes []int }

func (l *sizeLog) Write(p []byte) (int, error) {
	l.sizes = append(l.sizes, len(p))
	return len(p), nil
}

// replacerWrites runs data through a replacer of v cut at sizes (cycled),
// and returns the sizes of the writes it made, a -1 before the flush's.
func replacerWrites(v []byte, data string, sizes []int) []int {
	l := &sizeLog{}
	r := egress.NewReplacer(l, v, []byte(placeholder))
	for i, rest := 0, data; rest != ""; i++ {
		n := min(sizes[i%len(sizes)], len(rest))
		r.Write([]byte(rest[:n]))
		rest = rest[n:]
	}
	l.sizes = append(l.sizes, -1)
	r.Flush()
	return l.sizes
}

// TestEchoOracleRecoversNothing is the attack: guess the value a
// byte at a time, keeping the byte whose answer looks different from that
// to a guess known to be wrong (the one the proxy held back most of, when
// several do), within a budget of requests. It must learn
// nothing: no guess looks different.
func TestEchoOracleRecoversNothing(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-"
	const budget = 1600
	for _, path := range []string{"/stream", "/once"} {
		t.Run(path[1:], func(t *testing.T) {
			roots, _ := echoRig(t)
			a := startRigProxy(t, roots, []byte(value), "secret.boxmaker.test").attacker(t)
			known, asked := "", 0
			for len(known) < len(value) && asked+len(alphabet)+1 <= budget {
				base := a.ask(path, known+"~") // '~' is in no value of this alphabet
				asked++
				// Of the guesses that look different from a wrong one, the
				// one the proxy held back most of (a guess that ends with the
				// value's first byte looks different too).
				best, held := "", 0
				for i := range len(alphabet) {
					s := a.ask(path, known+alphabet[i:i+1])
					asked++
					if s.err != "" {
						t.Fatalf("after %d requests: %v", asked, s)
					}
					if !s.equal(base) && len(s.chunks) > 0 && (best == "" || s.chunks[0] < held) {
						best, held = alphabet[i:i+1], s.chunks[0]
					}
				}
				if best == "" {
					break
				}
				known += best
			}
			right := 0
			for right < len(known) && known[right] == value[right] {
				right++
			}
			if known != "" {
				t.Errorf("in %d requests the attack found %d bytes that look different, %d of them the value's (of %d)", asked, len(known), right, len(value))
			}
		})
	}
}

// TestStreamedLinesGoOnWhole: holding back a fixed tail must not hold up
// a streamed answer: a line that ends with a byte no value can hold
// reaches the tool whole while the host waits to send more.
func TestStreamedLinesGoOnWhole(t *testing.T) {
	roots, h := echoRig(t)
	r := startRigProxy(t, roots, []byte(value), "secret.boxmaker.test")
	for _, line := range []string{
		"first line\n",
		"data: {\"n\":1}\n\n",
		"a\r\n",
		value[:5] + "\n", // the start of the value, then a line end
		string(bytes.Repeat([]byte("x"), 100)) + "\n",
		"tab\tand NUL\x00",
	} {
		a := r.attacker(t)
		if err := a.sendLines(line); err != nil {
			t.Fatal(err)
		}
		var got []byte
		a.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var err error
		for len(got) < len(line) && err == nil {
			var data []byte
			data, err = a.readChunk()
			got = append(got, data...)
		}
		h.release <- struct{}{}
		if err != nil || string(got) != line {
			t.Errorf("%q: while the host waited the tool had %q (%v)", line, got, err)
			continue
		}
		a.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for err == nil {
			var data []byte
			if data, err = a.readChunk(); data == nil {
				break
			}
			got = append(got, data...)
		}
		if err != nil || string(got) != line+"last line\n" {
			t.Errorf("%q: the whole body %q (%v)", line, got, err)
		}
	}
}
