// Package tinymodel writes tiny GGUF chat models for tests against the real
// llama-server: qwen2 architecture, the real tokenizer of a vocab-only GGUF
// from the llama.cpp tree (models/ggml-vocab-qwen2.gguf, with Qwen2.5's
// added tokens such as <tool_call>), a real chat template from the tree,
// and weights that are either random (nonsense answers that rarely end) or
// a token-to-token table that makes the model answer a fixed Script, then
// <|im_end|>, under llama-server's default sampling. Everything around the
// weights (templating with --jinja, tool-call and reasoning parsing,
// streaming, the prompt cache) is llama-server's own.
//
// A table answers the same whatever the conversation, so a model whose
// Script calls a tool would call it again after every result. AfterTool is
// a second script, answered instead once the prompt holds a tool response
// (weights.go says how). It stays chosen for every later answer of a
// conversation that holds one, and a user text holding "_response" (as in
// "http_response") selects it too.
//
// ScriptTokens gives the answer as token ids that may repeat (a tool call
// exactly as the template renders it); such a model also looks back at up
// to seven earlier tokens to choose the next one (context.go).
//
// It is pure Go (no Python or numpy), so the tests can make the models they
// need in a temporary directory: 0.3 s to write one (45 MB).
// cmd/tinymodel is the command-line front end; .ci/llama-setup uses it.
package tinymodel

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Defaults, relative to the llama.cpp tree.
const (
	DefaultVocab    = "models/ggml-vocab-qwen2.gguf"
	DefaultTemplate = "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
	// ThinkingTemplate is Qwen3's template, whose reasoning
	// (<think>...</think>) llama-server parses out of the answer.
	ThinkingTemplate = "models/templates/Qwen-Qwen3-0.6B.jinja"
)

// Options describe a model. The zero value (with LlamaSrc) is a random
// model with Qwen2.5's tokenizer and template.
type Options struct {
	// LlamaSrc is the llama.cpp source tree (.ci/llama-build leaves it in
	// CACHE/llama.cpp); Vocab and Template are relative to it unless
	// absolute.
	LlamaSrc string
	Vocab    string // default DefaultVocab
	Template string // a chat template file; default DefaultTemplate

	// Script makes the model answer exactly this text, then <|im_end|>.
	// It may hold special tokens (<tool_call>), each at most once; the
	// plain text between them is spelled with tokens that are all
	// different (the search says when it cannot: vary the spacing).
	Script string
	// AfterTool, with Script, is the answer once the prompt holds a tool
	// response; it may not use any token that Script uses.
	AfterTool string
	// ScriptTokens, instead of Script, is the answer as token ids (say the
	// server's own tokenization of a rendered tool call), then <|im_end|>.
	// Tokens may repeat: the next token is chosen from the current one and
	// the two before it (context.go says how), so a text that a bigram
	// table cannot spell can be written exactly as a tokenizer splits it.
	ScriptTokens []int

	Seed   int64 // the random weights' seed; the same options give the same bytes
	Layers int   // default 2
	// Embd is the embedding width: a multiple of 8; by default 64, or the
	// next multiple of 32 that holds the scripts' steps. With ScriptTokens
	// it is sized by the plan and must be left 0.
	Embd int
	Ctx  int // the trained context length written to the file; default 32768
}

func (o Options) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(o.LlamaSrc, p)
}

func (o Options) withDefaults() (Options, error) {
	if o.Vocab == "" {
		o.Vocab = DefaultVocab
	}
	if o.Template == "" {
		o.Template = DefaultTemplate
	}
	if o.LlamaSrc == "" && (!filepath.IsAbs(o.Vocab) || !filepath.IsAbs(o.Template)) {
		return o, fmt.Errorf("tinymodel: no llama.cpp tree given (Options.LlamaSrc; .ci/llama-setup prints BOXMAKER_TEST_LLAMA_SRC)")
	}
	if o.Layers == 0 {
		o.Layers = 2
	}
	if o.Ctx == 0 {
		o.Ctx = 32768
	}
	switch {
	case o.Script != "" && len(o.ScriptTokens) > 0:
		return o, fmt.Errorf("tinymodel: give Script or ScriptTokens, not both")
	case o.AfterTool != "" && o.Script == "" && len(o.ScriptTokens) == 0:
		return o, fmt.Errorf("tinymodel: AfterTool needs a Script too")
	case o.Layers < 1 || o.Ctx < 1 || o.Embd < 0:
		return o, fmt.Errorf("tinymodel: layers %d, ctx %d and embd %d must be positive", o.Layers, o.Ctx, o.Embd)
	case o.Embd%8 != 0:
		return o, fmt.Errorf("tinymodel: embd %d is not a multiple of 8 (4 heads of an even size)", o.Embd)
	}
	return o, nil
}

// Spell loads the vocabulary and spells the scripts, writing nothing: the
// token paths the model's table would hold.
func Spell(o Options) (*Plan, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Script == "" && len(o.ScriptTokens) == 0 {
		return nil, fmt.Errorf("tinymodel: no Script to spell")
	}
	v, err := loadVocab(o.path(o.Vocab))
	if err != nil {
		return nil, err
	}
	return v.planOptions(o)
}

// Write writes the model to path, atomically (a temporary file beside it,
// then a rename), creating the directory if needed.
func Write(path string, o Options) error {
	kvs, ts, err := build(o)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, func(w io.Writer) error { return encodeGGUF(w, kvs, ts) }); err != nil {
		return fmt.Errorf("tinymodel: writing %s: %w", path, err)
	}
	return nil
}

func build(o Options) ([]KV, []tensor, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	v, err := loadVocab(o.path(o.Vocab))
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := os.ReadFile(o.path(o.Template))
	if err != nil {
		return nil, nil, fmt.Errorf("tinymodel: the chat template: %w", err)
	}
	var p *Plan
	name := "tiny-qwen2-random"
	embd := o.Embd
	var cp *contextPlan
	if o.Script != "" || len(o.ScriptTokens) > 0 {
		if p, err = v.planOptions(o); err != nil {
			return nil, nil, err
		}
		name = "tiny-qwen2-scripted"
		need := planLayout(p).needDim
		if p.Context {
			if cp, err = newContextPlan(p); err != nil {
				return nil, nil, err
			}
			need = cp.embd
			if o.Embd != 0 && o.Embd != need {
				return nil, nil, fmt.Errorf("tinymodel: ScriptTokens take an embd of %d; leave Embd 0", need)
			}
			embd = need
		}
		if embd == 0 {
			embd = max(defaultEmbd, (need+31)/32*32)
		}
		if embd < need {
			return nil, nil, fmt.Errorf("tinymodel: the scripts take %d dimensions; embd %d is too small (leave it 0 to size it)", need, embd)
		}
	}
	if embd == 0 {
		embd = defaultEmbd
	}
	s := shape{vocab: len(v.tokens), embd: embd, layers: o.Layers, ff: 2 * embd, ctx: o.Ctx}
	nh, nkv := heads, headsKV
	if cp != nil {
		nh, nkv = ctxHeads, ctxHeads
	}
	u32 := func(k string, n int) KV { return KV{Key: k, Type: TypeUint32, Value: uint32(n)} }
	kvs := []KV{
		{Key: "general.architecture", Type: TypeString, Value: "qwen2"},
		{Key: "general.name", Type: TypeString, Value: name},
		u32("qwen2.context_length", s.ctx),
		u32("qwen2.embedding_length", s.embd),
		u32("qwen2.block_count", s.layers),
		u32("qwen2.feed_forward_length", s.ff),
		u32("qwen2.attention.head_count", nh),
		u32("qwen2.attention.head_count_kv", nkv),
		{Key: "qwen2.rope.freq_base", Type: TypeFloat32, Value: float32(ropeBase)},
		{Key: "qwen2.attention.layer_norm_rms_epsilon", Type: TypeFloat32, Value: float32(rmsEps)},
		u32("general.file_type", 1), // mostly F16
	}
	kvs = append(kvs, v.kvs...)
	kvs = setKV(kvs, KV{Key: "tokenizer.chat_template", Type: TypeString, Value: string(tmpl)})
	if cp != nil {
		return kvs, contextWeights(s, cp, o.Seed), nil
	}
	return kvs, weights(s, p, o.Seed), nil
}
