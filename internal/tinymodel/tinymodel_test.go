package tinymodel

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// model is a written model read back.
type model struct {
	t *testing.T
	b []byte
	f *File
}

func readModel(t *testing.T, path string) *model {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadGGUF(b)
	if err != nil {
		t.Fatal(err)
	}
	return &model{t, b, f}
}

func (m *model) value(key string) any {
	kv, ok := m.f.Get(key)
	if !ok {
		m.t.Fatalf("no key %s", key)
	}
	return kv.Value
}

func (m *model) tensor(name string) TensorInfo {
	for _, ti := range m.f.Tensors {
		if ti.Name == name {
			return ti
		}
	}
	m.t.Fatalf("no tensor %s", name)
	return TensorInfo{}
}

// at is entry (row, col) of a matrix, or (0, col) of a vector.
func (m *model) at(name string, row, col int) float32 {
	ti := m.tensor(name)
	i := m.f.DataStart + ti.Offset
	k := uint64(row)*ti.Dims[0] + uint64(col)
	if ti.Type == ggmlF16 {
		return f16float(binary.LittleEndian.Uint16(m.b[i+2*k:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(m.b[i+4*k:]))
}

func writeTimed(t *testing.T, path string, o Options) time.Duration {
	t.Helper()
	start := time.Now()
	if err := Write(path, o); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func TestWriteScripted(t *testing.T) {
	src := llamaSrc(t)
	path := filepath.Join(t.TempDir(), "models", "tool.gguf")
	o := Options{LlamaSrc: src, Script: toolScript, AfterTool: afterToolText}
	t.Logf("wrote a scripted model in %v", writeTimed(t, path, o))
	m := readModel(t, path)

	// The header keys and the tokenizer.
	for key, want := range map[string]any{
		"general.architecture":                   "qwen2",
		"qwen2.embedding_length":                 uint32(64),
		"qwen2.block_count":                      uint32(2),
		"qwen2.attention.head_count":             uint32(4),
		"qwen2.attention.head_count_kv":          uint32(2),
		"qwen2.context_length":                   uint32(32768),
		"tokenizer.ggml.eos_token_id":            uint32(151645),
		"tokenizer.ggml.bos_token_id":            uint32(151643),
		"tokenizer.ggml.padding_token_id":        uint32(151643),
		"tokenizer.ggml.add_bos_token":           false,
		"general.file_type":                      uint32(1),
		"qwen2.attention.layer_norm_rms_epsilon": float32(1e-6),
	} {
		if got := m.value(key); got != want {
			t.Errorf("%s = %#v, want %#v", key, got, want)
		}
	}
	tmpl, err := os.ReadFile(filepath.Join(src, DefaultTemplate))
	if err != nil {
		t.Fatal(err)
	}
	if m.value("tokenizer.chat_template") != string(tmpl) {
		t.Error("the chat template is not the tree's file")
	}
	toks, types := m.value("tokenizer.ggml.tokens").([]string), m.value("tokenizer.ggml.token_type").([]int32)
	for id, want := range map[int]struct {
		text string
		typ  int32
	}{151644: {"<|im_start|>", tokControl}, 151646: {"<|object_ref_start|>", tokControl},
		151657: {"<tool_call>", tokUserDefined}, 151658: {"</tool_call>", tokUserDefined},
		151664: {"<|file_sep|>", tokUserDefined}, 151665: {"[PAD151665]", tokUserDefined}} {
		if toks[id] != want.text || types[id] != want.typ {
			t.Errorf("token %d is %q type %d, want %q type %d", id, toks[id], types[id], want.text, want.typ)
		}
	}
	vocabFile, err := ReadGGUFFile(filepath.Join(src, DefaultVocab))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range vocabFile.KVs {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		got, ok := m.f.Get(kv.Key)
		if !ok {
			t.Errorf("%s was not copied", kv.Key)
		} else if kv.Key == "tokenizer.ggml.merges" && !reflect.DeepEqual(got, kv) {
			t.Errorf("%s differs from the vocab file's", kv.Key)
		}
	}

	// The tensors and the table.
	if ti := m.tensor("token_embd.weight"); !reflect.DeepEqual(ti.Dims, []uint64{64, 151936}) || ti.Type != ggmlF16 {
		t.Errorf("token_embd %+v", ti)
	}
	if ti := m.tensor("blk.1.ffn_down.weight"); !reflect.DeepEqual(ti.Dims, []uint64{128, 64}) || ti.Type != ggmlF32 {
		t.Errorf("ffn_down %+v", ti)
	}
	p, err := Spell(o)
	if err != nil {
		t.Fatal(err)
	}
	l := planLayout(p)
	unit := func(tok, dim int) {
		t.Helper()
		for c := range 64 {
			want := float32(0)
			if c == dim {
				want = 1
			}
			if got := m.at("token_embd.weight", tok, c); got != want {
				t.Fatalf("embedding of %d at %d is %v, want %v", tok, c, got, want)
			}
		}
	}
	for pi, path := range [][]int{p.Reply, p.AfterTool} {
		prev := p.Start
		for i, id := range path {
			unit(prev, l.dim[prev])
			dim, want := l.dim[prev], float32(stepWeight)
			if pi == 1 && i == 0 {
				dim, want = l.f, flagWeight
			}
			if got := m.at("output.weight", id, dim); got != want {
				t.Errorf("output %d at %d is %v, want %v", id, dim, got, want)
			}
			prev = id
		}
	}
	unit(p.Marker, l.m)
	for _, tok := range []int{0, 1000, 151935} {
		if got := m.at("token_embd.weight", tok, l.m); got != 0 {
			t.Errorf("token %d has %v on the marker's dimension", tok, got)
		}
	}
	// Layer 0 holds the AfterTool head; nothing else in the layers.
	lo := 64/heads/2 - 1
	for _, c := range []struct {
		name     string
		row, col int
		want     float32
	}{
		{"blk.0.attn_q.weight", lo, 0, keyScale},
		{"blk.0.attn_q.bias", 0, lo, -keyScale * 4},
		{"blk.0.attn_k.weight", lo, l.m, keyScale},
		{"blk.0.attn_v.weight", 0, l.m, 0.125},
		{"blk.0.attn_output.weight", l.f, 0, 1},
		{"blk.0.attn_q.weight", lo, 1, 0},
		{"blk.1.attn_q.weight", lo, 0, 0},
		{"blk.0.ffn_down.weight", 3, 3, 0},
		{"blk.1.attn_norm.weight", 0, 5, 1},
	} {
		if got := m.at(c.name, c.row, c.col); got != c.want {
			t.Errorf("%s[%d][%d] = %v, want %v", c.name, c.row, c.col, got, c.want)
		}
	}
}

func TestWriteRandomDeterministic(t *testing.T) {
	src := llamaSrc(t)
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf"), filepath.Join(dir, "c.gguf")
	d := writeTimed(t, a, Options{LlamaSrc: src})
	t.Logf("wrote a random model in %v", d)
	writeTimed(t, b, Options{LlamaSrc: src})
	writeTimed(t, c, Options{LlamaSrc: src, Seed: 2})
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	cb, _ := os.ReadFile(c)
	if !bytes.Equal(ab, bb) {
		t.Error("the same options gave different files")
	}
	if bytes.Equal(ab, cb) {
		t.Error("another seed gave the same file")
	}
	m := readModel(t, a)
	if m.value("general.name") != "tiny-qwen2-random" {
		t.Errorf("name %v", m.value("general.name"))
	}
	// Random layers: an untrained model, not a table.
	if m.at("blk.1.ffn_down.weight", 2, 3) == 0 || m.at("blk.0.attn_output.weight", 1, 1) == 0 {
		t.Error("a random model has zero layer weights")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteOptions(t *testing.T) {
	src := llamaSrc(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "think.gguf")
	o := Options{LlamaSrc: src, Template: ThinkingTemplate, Script: "<think>\nLet me think.\n</think>\n\nHello.", Layers: 1, Ctx: 4096}
	writeTimed(t, path, o)
	m := readModel(t, path)
	tmpl, _ := os.ReadFile(filepath.Join(src, ThinkingTemplate))
	if m.value("tokenizer.chat_template") != string(tmpl) || m.value("qwen2.block_count") != uint32(1) || m.value("qwen2.context_length") != uint32(4096) {
		t.Error("the options were not written")
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "no llama.cpp tree"},
		{Options{LlamaSrc: src, AfterTool: "x"}, "needs a Script"},
		{Options{LlamaSrc: src, Embd: 60}, "multiple of 8"},
		{Options{LlamaSrc: src, Script: "Hello! I am a tiny scripted test model.", Embd: 8}, "too small"},
		{Options{LlamaSrc: src, Template: "no/such.jinja"}, "chat template"},
		{Options{LlamaSrc: dir}, "no such file"},
	} {
		err := Write(filepath.Join(dir, "bad.gguf"), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.gguf")); err == nil {
		t.Error("a failed write left a file")
	}
	// A long script widens the model to hold every step.
	long := "Alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu; apple banana cherry date elder fig grape honeydew kiwi lemon mango nectarine orange pear quince raspberry strawberry tangerine, one two three four five six seven eight nine ten."
	writeTimed(t, path, Options{LlamaSrc: src, Script: long, AfterTool: "Fine!"})
	if e := readModel(t, path).value("qwen2.embedding_length").(uint32); e <= 64 || e%32 != 0 {
		t.Errorf("a long script got embd %d", e)
	}
}

func BenchmarkWrite(b *testing.B) {
	src := os.Getenv("BOXMAKER_TEST_LLAMA_SRC")
	if src == "" {
		src = "/var/cache/boxmaker/llama/llama.cpp"
	}
	path := filepath.Join(b.TempDir(), "m.gguf")
	for b.Loop() {
		if err := Write(path, Options{LlamaSrc: src, Script: toolScript, AfterTool: afterToolText}); err != nil {
			b.Fatal(err)
		}
	}
}
