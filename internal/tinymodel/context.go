package tinymodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// A context model (Options.ScriptTokens) chooses the next token from the
// current token and up to seven before it, so an answer may repeat tokens
// and be written exactly as the server's tokenizer splits it (a tool call
// as the template renders it, whose every `": "` is the same token).
//
// Every token of the paths, and the four the template writes before the
// answer (<|im_end|> "\n" <|im_start|> "assistant"), embeds as a unit
// vector on its own dimension, as in a table; no other token has a value
// in those dimensions. The model has 8 heads, each its own KV head: head 0
// is AfterTool's (as in weights.go), head b looks b tokens back. A
// look-back head's query and key come from biases alone (the weights are
// zero), so its score depends only on how far back the key is, through
// RoPE: the key bias is A on the first coordinate of each of the seven
// highest-frequency pairs, the query A*(cos bθ, -sin bθ) there, and the
// score A²·Σcos((d-b)θ_i)/sqrt(head) peaks at d = b, ahead of every other
// distance within 32768 by at least 0.25·A²/sqrt(head) for every head size
// up to 96 (A² = 80·sqrt(head): 20 nats; TestContextLookBackMargin), so
// the head reads that one token. Its value carries the token's code (its
// dimension) into block b of the residual. The output row of a step's
// next token has 5·(blocks+1) on the current token, so a token that
// follows another current token never wins, and 5 on just as many
// look-back codes as tell the step from the steps with the same token and
// another next token. newContextPlan simulates every step, counting the
// prompt before those four tokens as unknown (lighting whatever helps a
// rival), and says which step the context does not decide.
const (
	ctxPairs    = 7
	ctxScoreSqr = 80.0 // A² / sqrt(head)
	ctxMinHead  = 16
	ctxMaxHead  = 96 // the look-back margin is tested up to here
	ctxHeads    = 8  // no GQA: head 0 is AfterTool's, heads 1..ctxMaxBack look back
	ctxMaxBack  = ctxHeads - 1
)

type ctxStep struct {
	cur, next int
	back      []int // back[b-1]: the token b before cur, -1 where unknown
	flag      bool  // AfterTool's first step: chosen by the flag alone
}

// contextPlan is the residual layout and the steps of a context model.
type contextPlan struct {
	p      *Plan
	dim    map[int]int // token -> its dimension, also its code
	m, f   int
	back   []int // first dimension of each look-back block
	head   int
	embd   int
	steps  []ctxStep
	nCodes int
}

// planOptions makes the plan of either kind of script.
func (v *vocab) planOptions(o Options) (*Plan, error) {
	if len(o.ScriptTokens) == 0 {
		return v.plan(o.Script, o.AfterTool)
	}
	if v.get("tokenizer.ggml.model").Value != "gpt2" {
		return nil, errors.New("tinymodel: a script needs a byte-level BPE (gpt2) vocabulary")
	}
	start, ok := v.id[byteLevel(startPiece)]
	if !ok {
		return nil, errors.New("tinymodel: the vocabulary has no newline token to start a script from")
	}
	imStart, ok1 := v.id["<|im_start|>"]
	asst, ok2 := v.id[byteLevel("assistant")]
	if !ok1 || !ok2 {
		return nil, errors.New("tinymodel: ScriptTokens need a ChatML vocabulary (<|im_start|>assistant)")
	}
	pl := &Plan{Start: start, Marker: -1, v: v, Context: true, Before: [4]int{v.eos, start, imStart, asst}}
	used := map[int]bool{start: true, v.eos: true}
	for _, id := range o.ScriptTokens {
		if id < 0 || id >= len(v.tokens) || id == v.eos {
			return nil, fmt.Errorf("tinymodel: script token %d is not a token of the vocabulary (or is <|im_end|>)", id)
		}
		used[id] = true
	}
	pl.Reply = append(slices.Clone(o.ScriptTokens), v.eos)
	if o.AfterTool != "" {
		m, ok := v.id[byteLevel(markerPiece)]
		if !ok {
			return nil, fmt.Errorf("tinymodel: AfterTool needs a %q token in the vocabulary (Qwen's has one)", markerPiece)
		}
		if used[m] {
			return nil, fmt.Errorf("tinymodel: the script tokens hold the AfterTool marker %q", markerPiece)
		}
		pl.Marker = m
		used[m] = true
		ids, err := v.spelling(o.AfterTool, used)
		if err != nil {
			return nil, fmt.Errorf("%w (the AfterTool script may not use a token of the script either)", err)
		}
		pl.AfterTool = append(ids, v.eos)
	}
	return pl, nil
}

func newContextPlan(p *Plan) (*contextPlan, error) {
	c := &contextPlan{p: p, dim: map[int]int{p.Start: 0}, m: -1, f: -1}
	add := func(id int) {
		if _, ok := c.dim[id]; !ok {
			c.dim[id] = len(c.dim)
		}
	}
	for _, id := range p.Before {
		add(id)
	}
	for pi, path := range [][]int{p.Reply, p.AfterTool} {
		if len(path) == 0 {
			continue
		}
		seq := append(append(slices.Clone(p.Before[:]), p.Start), path...)
		first := len(p.Before)
		for i := first; i+1 < len(seq); i++ {
			add(seq[i])
			s := ctxStep{cur: seq[i], next: seq[i+1], flag: pi == 1 && i == first}
			for b := 1; b <= ctxMaxBack; b++ {
				s.back = append(s.back, -1)
				if i-b >= 0 {
					s.back[b-1] = seq[i-b]
				}
			}
			c.steps = append(c.steps, s)
		}
	}
	c.nCodes = len(c.dim)
	var err error
	for k := 1; k <= ctxMaxBack; k++ {
		next := c.nCodes
		if p.Marker >= 0 {
			c.m, c.f = next, next+1
			next += 2
		}
		c.back = c.back[:0]
		for range k {
			c.back = append(c.back, next)
			next += c.nCodes
		}
		// Each head's value holds every code, after a row left free (row
		// 0 of head 0 is AfterTool's); the pairs stay clear of
		// AfterTool's lowest-frequency pair.
		c.head = max(ctxMinHead, c.nCodes+1, (next+ctxHeads-1)/ctxHeads)
		c.head += c.head % 2
		c.embd = ctxHeads * c.head
		if c.head > ctxMaxHead {
			return nil, fmt.Errorf("tinymodel: the script tokens hold %d different tokens; at most %d fit", c.nCodes, ctxMaxHead-1)
		}
		if err = c.check(); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// lit are the residual dimensions lit at a step (1 each), and how many
// look-back blocks read the prompt before the generation prompt, unknown.
func (c *contextPlan) lit(s ctxStep) ([]int, []int) {
	fs, unknown := []int{c.dim[s.cur]}, []int(nil)
	for b, blk := range c.back {
		if s.back[b] < 0 {
			unknown = append(unknown, blk)
			continue
		}
		fs = append(fs, blk+c.dim[s.back[b]])
	}
	if s.flag {
		fs = append(fs, c.f)
	}
	return fs, unknown
}

// need is how many tokens back step i must look: the fewest that tell it
// from every step with the same token and another next token.
func (c *contextPlan) need(i int) (int, bool) {
	s := c.steps[i]
	for k := 0; k <= len(c.back); k++ {
		clash := false
		for _, o := range c.steps {
			if o.cur == s.cur && o.next != s.next && !o.flag && slices.Equal(o.back[:k], s.back[:k]) {
				clash = true
				break
			}
		}
		if !clash {
			return k, true
		}
	}
	return 0, false
}

// curWeight outweighs every look-back block together, so a token whose
// current token differs never wins; flag outweighs them all.
func (c *contextPlan) curWeight() float32 { return stepWeight * float32(len(c.back)+1) }

// rows are the output rows the steps set: token -> dimension -> weight.
func (c *contextPlan) rows() (map[int]map[int]float32, error) {
	rows := map[int]map[int]float32{}
	for i, s := range c.steps {
		r := rows[s.next]
		if r == nil {
			r = map[int]float32{}
			rows[s.next] = r
		}
		if s.flag {
			r[c.f] = 2 * c.curWeight() // lit only after a tool response
			continue
		}
		k, ok := c.need(i)
		if !ok {
			return nil, fmt.Errorf("tinymodel: step %d (%q after %q) leads to %q, and to another token after the same %d tokens",
				i, c.p.text(s.cur), c.p.text(s.back[0]), c.p.text(s.next), len(c.back)+1)
		}
		r[c.dim[s.cur]] = c.curWeight()
		for b := range k {
			if s.back[b] < 0 {
				return nil, fmt.Errorf("tinymodel: step %d (%q) is told apart only by the prompt before the answer", i, c.p.text(s.cur))
			}
			r[c.back[b]+c.dim[s.back[b]]] = stepWeight
		}
	}
	return rows, nil
}

// check simulates every step on the output rows: the right token must win
// by one stepWeight at least, even where the unknown prompt lights a code
// that favours another.
func (c *contextPlan) check() error {
	rows, err := c.rows()
	if err != nil {
		return err
	}
	for i, s := range c.steps {
		fs, unknown := c.lit(s)
		score := func(tok int) float32 {
			var sum float32
			for _, d := range fs {
				sum += rows[tok][d]
			}
			return sum
		}
		// The unknown prompt may light any code of a block the other
		// token reads.
		worst := func(tok int) float32 {
			sum := score(tok)
			for _, blk := range unknown {
				for d := range c.nCodes {
					if rows[tok][blk+d] > 0 {
						sum += stepWeight
						break
					}
				}
			}
			return sum
		}
		want := score(s.next)
		for tok := range rows {
			if tok != s.next && worst(tok) > want-stepWeight {
				return fmt.Errorf("tinymodel: step %d (%q after %q) cannot tell %q from %q: %d tokens of context are not enough",
					i, c.p.text(s.cur), c.p.text(s.back[0]), c.p.text(s.next), c.p.text(tok), len(c.back)+1)
			}
		}
	}
	return nil
}

// contextWeights makes the tensors of a context model.
func contextWeights(s shape, c *contextPlan, seed int64) []tensor {
	src := rand.NewPCG(uint64(seed), 0x74696e796d6f64) // "tinymod"
	rng := rand.New(src)
	E, head := s.embd, s.embd/ctxHeads
	ekv := head * ctxHeads
	p := c.p

	embd := newMat(s.vocab, E, true)
	embd.fillNormal(src, rng, embdStd)
	out := newMat(s.vocab, E, true)
	out.fillNormal(src, rng, randStd)
	// No other token has a key for AfterTool or a code to look back at.
	for r := range s.vocab {
		for d := range c.nCodes {
			embd.set(r, d, 0)
		}
		if c.m >= 0 {
			embd.set(r, c.m, 0)
		}
	}
	unit := func(tok, dim int) {
		for col := range E {
			embd.set(tok, col, 0)
		}
		embd.set(tok, dim, 1)
	}
	for tok, d := range c.dim {
		unit(tok, d)
	}
	if c.m >= 0 {
		unit(p.Marker, c.m)
	}
	rows, _ := c.rows() // checked by newContextPlan
	for tok, r := range rows {
		for d, w := range r {
			out.set(tok, d, w)
		}
	}

	one := func() float32 { return 1 }
	ts := []tensor{embd.tensor("token_embd.weight")}
	norm := newMat(0, E, false)
	norm.fill(one)
	ts = append(ts, norm.tensor("output_norm.weight"), out.tensor("output.weight"))
	a := math.Sqrt(ctxScoreSqr * math.Sqrt(float64(head)))
	vs := float32(1 / math.Sqrt(float64(E)))
	for i := range s.layers {
		pre := fmt.Sprintf("blk.%d.", i)
		q, qb := newMat(E, E, false), newMat(0, E, false)
		k, kb := newMat(ekv, E, false), newMat(0, ekv, false)
		v, vb := newMat(ekv, E, false), newMat(0, ekv, false)
		o := newMat(E, E, false)
		if i == 0 {
			if c.m >= 0 { // AfterTool's head, as in weights.go
				lo := head/2 - 1
				q.set(lo, 0, keyScale)
				qb.set(0, lo, -keyScale*float32(math.Sqrt(float64(E)))/2)
				k.set(lo, c.m, keyScale)
				v.set(0, c.m, vs)
				o.set(c.f, 0, 1)
			}
			for b, blk := range c.back {
				h := b + 1 // head h (its own KV head) looks b+1 back
				for j := range ctxPairs {
					th := math.Pow(ropeBase, -2*float64(j)/float64(head))
					d0 := float64(b + 1)
					qb.set(0, h*head+j, float32(a*math.Cos(d0*th)))
					qb.set(0, h*head+j+head/2, float32(-a*math.Sin(d0*th)))
					kb.set(0, h*head+j, float32(a))
				}
				for _, d := range c.dim {
					v.set(h*head+d+1, d, vs)
					o.set(blk+d, h*head+d+1, 1)
				}
			}
		}
		gate, up, down := newMat(s.ff, E, false), newMat(s.ff, E, false), newMat(E, s.ff, false)
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
