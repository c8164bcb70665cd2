package tinymodel

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// The weights of a scripted model (see spell.go for the table). Every
// layer adds nothing (its output projections are zero), so the residual
// stream at the last position is that token's embedding: a unit vector on
// the token's own dimension k, which the final RMS norm scales to sqrt(E).
// The output row of the next token has stepWeight at k: a logit of
// 5*sqrt(E) = 40 for E=64 against noise of about 0.2, so llama-server's
// default sampling always picks it.
//
// AfterTool adds one attention head in layer 0. The marker token (the
// "_response" of "<tool_response>") embeds as a unit vector on dimension M,
// and column M of every other embedding is zero, so only the marker has a
// key. Head 0's query reads the start dimension (0) and its key reads M,
// both on the head's lowest-frequency RoPE pair (NEOX rope pairs i with
// i+head/2; i = head/2-1 turns by under 0.2 rad over 32768 positions, so the
// score hardly depends on distance). The query has a bias of minus half the
// start token's share: the start token's query is positive and scores
// keyScale^2*E/(2*sqrt(head)) (72 for E=64) on a marker against 0 for every
// other position, so it reads the markers alone; every other token's query
// is negative, so it never reads them. The value carries M into one
// dimension, which the output projection writes to dimension F. So the
// start token's residual is e0 + e_F when a tool response is in the prompt
// and e0 otherwise; AfterTool's first token has flagWeight on F and wins
// (20 against 5) only when F is lit, and no other step sees F at all.
const (
	stepWeight  = 5.0
	flagWeight  = 20.0
	keyScale    = 3.0
	randStd     = 0.02
	embdStd     = 1.0
	ropeBase    = 1e6
	rmsEps      = 1e-6
	heads       = 4
	headsKV     = 2
	defaultEmbd = 64
)

// mat is a row-major matrix (numpy's shape rows x cols; GGUF's dims are
// cols, rows) or, with rows 0, a vector of cols, stored as F32 or F16.
type mat struct {
	rows, cols int
	f16        bool
	data       []byte
}

func newMat(rows, cols int, f16 bool) *mat {
	size := 4
	if f16 {
		size = 2
	}
	return &mat{rows: rows, cols: cols, f16: f16, data: make([]byte, max(rows, 1)*cols*size)}
}

func (m *mat) set(r, c int, v float32) {
	i := r*m.cols + c
	if m.f16 {
		binary.LittleEndian.PutUint16(m.data[2*i:], f16bits(v))
	} else {
		binary.LittleEndian.PutUint32(m.data[4*i:], math.Float32bits(v))
	}
}

// fill sets every entry to f().
func (m *mat) fill(f func() float32) {
	for r := range max(m.rows, 1) {
		for c := range m.cols {
			m.set(r, c, f())
		}
	}
}

// fillNormal sets every entry to a normal deviate of the given std. An F16
// matrix (the two vocab-sized tables, 19 million entries between them)
// takes four entries from each 64-bit draw, 16 bits each, through a table
// of the normal quantiles: a few ms instead of a second, and under the race
// detector seconds less, for models that tests make on the fly.
func (m *mat) fillNormal(src *rand.PCG, rng *rand.Rand, std float64) {
	if !m.f16 {
		m.fill(func() float32 { return float32(rng.NormFloat64() * std) })
		return
	}
	fillQuantiles(m.data, normalQuantiles(std), src)
}

// fillQuantiles is the loop that fills the vocab-sized tables. The race
// detector would check each of its 30 million reads and writes, all of
// memory that only this goroutine has yet seen, and take over a second
// for it in every test that makes a model; go:norace leaves it out.
//
//go:norace
func fillQuantiles(d []byte, q *[1 << 16]uint16, src *rand.PCG) {
	i := 0
	for ; i+8 <= len(d); i += 8 {
		r := src.Uint64()
		binary.LittleEndian.PutUint64(d[i:], uint64(q[r&0xffff])|uint64(q[r>>16&0xffff])<<16|
			uint64(q[r>>32&0xffff])<<32|uint64(q[r>>48])<<48)
	}
	for ; i < len(d); i += 2 {
		binary.LittleEndian.PutUint16(d[i:], q[src.Uint64()&0xffff])
	}
}

// normalQuantiles maps 16 random bits to the F16 bits of a normal deviate
// of the given std: the quantile at (u+0.5)/65536.
func normalQuantiles(std float64) *[1 << 16]uint16 {
	var q [1 << 16]uint16
	for u := range q {
		p := (float64(u) + 0.5) / (1 << 16)
		q[u] = f16bits(float32(std * math.Sqrt2 * math.Erfinv(2*p-1)))
	}
	return &q
}

func (m *mat) tensor(name string) tensor {
	t := tensor{name: name, typ: ggmlF32, data: m.data, dims: []uint64{uint64(m.cols)}}
	if m.f16 {
		t.typ = ggmlF16
	}
	if m.rows > 0 {
		t.dims = append(t.dims, uint64(m.rows))
	}
	return t
}

// layout is where each token of a plan lives in the residual stream.
type layout struct {
	dim     map[int]int // source token -> its dimension
	m, f    int         // marker and flag dimensions (-1 without AfterTool)
	needDim int         // how many dimensions the table needs
}

func planLayout(p *Plan) layout {
	l := layout{dim: map[int]int{p.Start: 0}, m: -1, f: -1}
	next := 1
	for _, path := range [][]int{p.Reply, p.AfterTool} {
		for _, id := range path[:max(len(path)-1, 0)] { // the last is <|im_end|>, never a source
			l.dim[id] = next
			next++
		}
	}
	if p.Marker >= 0 {
		l.m, l.f = next, next+1
		next += 2
	}
	l.needDim = next
	return l
}

type shape struct {
	vocab, embd, layers, ff, ctx int
}

// weights makes the tensors: random (std 0.02, embeddings std 1, as an
// untrained model) without a plan, the table and the AfterTool head with one.
func weights(s shape, p *Plan, seed int64) []tensor {
	src := rand.NewPCG(uint64(seed), 0x74696e796d6f64) // "tinymod"
	rng := rand.New(src)
	one := func() float32 { return 1 }
	E, head := s.embd, s.embd/heads
	ekv := head * headsKV

	embd := newMat(s.vocab, E, true)
	embd.fillNormal(src, rng, embdStd)
	out := newMat(s.vocab, E, true)
	out.fillNormal(src, rng, randStd)
	var l layout
	if p != nil {
		l = planLayout(p)
		if l.m >= 0 {
			for r := range s.vocab {
				embd.set(r, l.m, 0)
			}
		}
		unit := func(tok, dim int) {
			for c := range E {
				embd.set(tok, c, 0)
			}
			embd.set(tok, dim, 1)
		}
		for pi, path := range [][]int{p.Reply, p.AfterTool} {
			prev := p.Start
			for i, id := range path {
				unit(prev, l.dim[prev])
				if pi == 1 && i == 0 {
					out.set(id, l.f, flagWeight) // lit only after a tool response
				} else {
					out.set(id, l.dim[prev], stepWeight)
				}
				prev = id
			}
		}
		if l.m >= 0 {
			unit(p.Marker, l.m)
		}
	}

	ts := []tensor{embd.tensor("token_embd.weight")}
	norm := newMat(0, E, false)
	norm.fill(one)
	ts = append(ts, norm.tensor("output_norm.weight"), out.tensor("output.weight"))
	for i := range s.layers {
		pre := fmt.Sprintf("blk.%d.", i)
		mk := func(rows, cols int) *mat {
			m := newMat(rows, cols, false)
			if p == nil { // else zero: a pure table, the layers add nothing
				m.fillNormal(src, rng, randStd)
			}
			return m
		}
		q, qb := mk(E, E), mk(0, E)
		k, kb := mk(ekv, E), mk(0, ekv)
		v, vb := mk(ekv, E), mk(0, ekv)
		o := mk(E, E)
		if i == 0 && l.m >= 0 {
			// Head 0 (of KV head 0), lowest-frequency RoPE component.
			lo := head/2 - 1
			q.set(lo, 0, keyScale)
			qb.set(0, lo, -keyScale*float32(math.Sqrt(float64(E)))/2)
			k.set(lo, l.m, keyScale)
			v.set(0, l.m, float32(1/math.Sqrt(float64(E))))
			o.set(l.f, 0, 1)
		}
		gate, up, down := mk(s.ff, E), mk(s.ff, E), mk(E, s.ff)
		ts = append(ts,
			norm.tensor(pre+"attn_norm.weight"),
			q.tensor(pre+"attn_q.weight"), qb.tensor(pre+"attn_q.bias"),
			k.tensor(pre+"attn_k.weight"), kb.tensor(pre+"attn_k.bias"),
			v.tensor(pre+"attn_v.weight"), vb.tensor(pre+"attn_v.bias"),
			o.tensor(pre+"attn_output.weight"),
			norm.tensor(pre+"ffn_norm.weight"),
			gate.tensor(pre+"ffn_gate.weight"), up.tensor(pre+"ffn_up.weight"),
			down.tensor(pre+"ffn_down.weight"))
	}
	return ts
}
