package redact

import "encoding/binary"

// sieveMin is the shortest pattern the sieve takes; shorter ones are left
// to bytes.Index. The sieve looks at every (len-7)th position only, so a
// short pattern would make it look almost everywhere.
const sieveMin = 24

// A sieve finds long patterns by looking at the text only every step
// bytes. Every 8 bytes of every pattern, at every offset, are hashed into
// a bit set. An occurrence of a pattern m long holds m-7 such 8-byte
// pieces at consecutive positions, so with step at most m-7 one of them
// lies at a position the sieve looks at; only there, when the bit is set,
// is the text read byte by byte (KMP, around the position). For a 1 MiB
// text and a 32-byte value that is one look every 35 bytes instead of a
// pass per form.
type sieve struct {
	ms   []*matcher
	step int
	// bits: hashes of the case-sensitive patterns' pieces; folded: of the
	// lower-case patterns' pieces, looked up with the text's piece lowered.
	bits, folded [1 << 16 / 64]uint64
	anyFold      bool
	// who: for a hash (with 1<<16 set for folded), the patterns that have
	// a piece with that hash.
	who map[uint32][]int
}

func hash8(w uint64) uint32 { return uint32((w * 0x9e3779b97f4a7c15) >> 48) }

// lower8 lowers the ASCII capitals among w's 8 bytes.
func lower8(w uint64) uint64 {
	const hi = 0x8080808080808080
	h := w &^ hi
	ge := h + 0x3f3f3f3f3f3f3f3f // a byte's top bit: it is >= 'A'
	gt := h + 0x2525252525252525 // a byte's top bit: it is > 'Z'
	return w | (ge&^gt&^w&hi)>>2
}

func newSieve(ms []*matcher) *sieve {
	sv := &sieve{ms: ms, who: map[uint32][]int{}}
	for i, m := range ms {
		if sv.step == 0 || len(m.pat)-7 < sv.step {
			sv.step = len(m.pat) - 7
		}
		for o := 0; o+8 <= len(m.pat); o++ {
			h := hash8(binary.LittleEndian.Uint64(m.pat[o:]))
			key := h
			if m.fold {
				sv.folded[h/64] |= 1 << (h % 64)
				sv.anyFold, key = true, h|1<<16
			} else {
				sv.bits[h/64] |= 1 << (h % 64)
			}
			if w := sv.who[key]; len(w) == 0 || w[len(w)-1] != i {
				sv.who[key] = append(w, i)
			}
		}
	}
	return sv
}

// scan calls fn with the pattern's index and the start of every
// occurrence in t, each once, in no particular order.
func (sv *sieve) scan(t []byte, fn func(i, start int)) {
	// For each pattern, KMP's progress: t[from:end] has been read, and q
	// is its state at end. Positions grow, so a window that begins inside
	// what was read can go on from end: each byte is read at most once
	// per pattern, so even a text full of false hits costs linear time.
	type progress struct{ end, q int }
	prog := make([]progress, len(sv.ms))
	visit := func(i, p int) {
		m, pr := sv.ms[i], &prog[i]
		from, to := max(0, p-(len(m.pat)-8)), min(len(t), p+len(m.pat))
		j, q := from, 0
		if pr.end >= from {
			j, q = pr.end, pr.q
		}
		for ; j < to; j++ {
			var found bool
			if q, found = m.step(q, t[j]); found {
				fn(i, j+1-len(m.pat))
			}
		}
		if j > pr.end {
			pr.end, pr.q = j, q
		}
	}
	for p := 0; p+8 <= len(t); p += sv.step {
		w := binary.LittleEndian.Uint64(t[p:])
		if h := hash8(w); sv.bits[h/64]&(1<<(h%64)) != 0 {
			for _, i := range sv.who[h] {
				visit(i, p)
			}
		}
		if sv.anyFold {
			if h := hash8(lower8(w)); sv.folded[h/64]&(1<<(h%64)) != 0 {
				for _, i := range sv.who[h|1<<16] {
					visit(i, p)
				}
			}
		}
	}
}

// finder finds a list of patterns: the long ones with a sieve, the short
// ones each with its own matcher.
type finder struct {
	ms    []*matcher
	sv    *sieve
	inSv  []int // sieve index → ms index
	short []int // ms indexes found with bytes.Index
}

func newFinder(ms []*matcher) *finder {
	fd := &finder{ms: ms}
	var long []*matcher
	for i, m := range ms {
		if len(m.pat) >= sieveMin {
			long = append(long, m)
			fd.inSv = append(fd.inSv, i)
		} else {
			fd.short = append(fd.short, i)
		}
	}
	if len(long) > 0 {
		fd.sv = newSieve(long)
	}
	return fd
}

// each calls fn with the pattern's index in the list and the start of every
// occurrence in t, each once.
func (fd *finder) each(t []byte, fn func(i, start int)) {
	if fd.sv != nil {
		fd.sv.scan(t, func(k, start int) { fn(fd.inSv[k], start) })
	}
	for _, i := range fd.short {
		fd.ms[i].each(t, func(start int) { fn(i, start) })
	}
}
