package tinymodel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testVocab is a small byte-level vocabulary: the plain tokens given (as
// text; stored in byte-level form), a newline, and special tokens.
func testVocab(plain ...string) *vocab {
	v := &vocab{id: map[string]int{}}
	add := func(text string, typ int32) {
		v.id[text] = len(v.tokens)
		v.tokens = append(v.tokens, text)
		v.types = append(v.types, typ)
	}
	add(byteLevel("\n"), tokNormal)
	for _, p := range plain {
		add(byteLevel(p), tokNormal)
	}
	add("<|im_end|>", tokControl)
	v.eos = v.id["<|im_end|>"]
	add("<tool_call>", tokUserDefined)
	add("[PAD99]", tokUserDefined)
	v.kvs = []KV{{Key: "tokenizer.ggml.model", Type: TypeString, Value: "gpt2"}}
	return v
}

// checkPath asserts a path's rules: no token twice, none the start, the
// end last, and the texts spelling the script.
func checkPath(t *testing.T, p *Plan, path []int, script string) {
	t.Helper()
	seen := map[int]bool{p.Start: true}
	for i, id := range path {
		if seen[id] {
			t.Errorf("token %d (%q) repeats in %v", id, p.v.tokens[id], path)
		}
		seen[id] = true
		if (id == p.v.eos) != (i == len(path)-1) {
			t.Errorf("<|im_end|> at %d of %v", i, path)
		}
	}
	if got := p.Text(path); got != script {
		t.Errorf("the path spells %q, want %q", got, script)
	}
}

func TestSpellNoRepeats(t *testing.T) {
	// "abab" cannot be "ab"+"ab": one spelling is "ab"+"a"+"b".
	v := testVocab("a", "b", "ab", "ba", " ", "x y")
	p, err := v.plan("abab", "")
	if err != nil {
		t.Fatal(err)
	}
	checkPath(t, p, p.Reply, "abab")
	if len(p.Reply) != 4 {
		t.Errorf("spelled with %d tokens, want 3 and the end: %v", len(p.Reply)-1, p.Reply)
	}
	// Spaces are byte-level symbols (Ġ) and must match as such.
	p, err = v.plan("x y ab", "")
	if err != nil {
		t.Fatal(err)
	}
	checkPath(t, p, p.Reply, "x y ab")
}

func TestSpellSpecialTokens(t *testing.T) {
	v := testVocab("a", "b", "ab")
	p, err := v.plan("a<tool_call>b", "")
	if err != nil {
		t.Fatal(err)
	}
	checkPath(t, p, p.Reply, "a<tool_call>b")
	if p.Reply[1] != v.id["<tool_call>"] {
		t.Errorf("<tool_call> is not its own token: %v", p.Reply)
	}
	for script, want := range map[string]string{
		"<tool_call>a<tool_call>": "occurs twice",
		"a<|im_end|>":             "writes itself at the end",
	} {
		if _, err := v.plan(script, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", script, err, want)
		}
	}
	// A placeholder is not a special token: its text is plain (and
	// here unspellable).
	if _, err := v.plan("[PAD99]", ""); err == nil {
		t.Error("[PAD99] was spelled")
	}
}

func TestSpellImpossible(t *testing.T) {
	v := testVocab("a", "b", "ab")
	// Three a's need three different tokens holding an a: only "a" fits.
	_, err := v.plan("aaa", "")
	if err == nil || !strings.Contains(err.Error(), `needs 3 different tokens where its "a" characters are, and only 1 fit`) {
		t.Errorf("aaa: %v", err)
	}
	// The newline is the start token, so a lone one cannot be written.
	if _, err := v.plan("a\n", ""); err == nil || !strings.Contains(err.Error(), "cannot be spelled") {
		t.Errorf(`"a\n": %v`, err)
	}
	// The counting bound passes here (each a and each b has tokens
	// enough), but the only spelling is "ab"+"ab": the search must prove
	// there is none other.
	w := testVocab("a", "ab", "ba")
	if _, err := w.plan("abab", ""); err == nil || !strings.Contains(err.Error(), "cannot be spelled") {
		t.Errorf("abab: %v", err)
	}
}

func TestSpellAfterTool(t *testing.T) {
	v := testVocab("a", "b", "ab", "ba", "c", "_response")
	p, err := v.plan("ab", "bac")
	if err != nil {
		t.Fatal(err)
	}
	checkPath(t, p, p.Reply, "ab")
	checkPath(t, p, p.AfterTool, "bac")
	if p.Marker != v.id[byteLevel("_response")] {
		t.Errorf("marker %d", p.Marker)
	}
	for _, id := range append(p.Reply[:len(p.Reply)-1], p.AfterTool...) {
		if id == p.Marker {
			t.Errorf("a path uses the marker")
		}
	}
	// The two paths share no token (but the end).
	if _, err := testVocab("a", "_response").plan("a", "a"); err == nil || !strings.Contains(err.Error(), "may not use a token of the Script") {
		t.Errorf("shared tokens: %v", err)
	}
	if _, err := testVocab("a").plan("a", "a"); err == nil || !strings.Contains(err.Error(), `"_response" token`) {
		t.Errorf("no marker: %v", err)
	}
}

// llamaSrc is the llama.cpp tree that .ci/llama-setup leaves; the tests
// that need it fail without it.
func llamaSrc(t *testing.T) string {
	t.Helper()
	src := os.Getenv("BOXMAKER_TEST_LLAMA_SRC")
	if src == "" {
		src = "/var/cache/boxmaker/llama/llama.cpp"
	}
	if _, err := os.Stat(filepath.Join(src, DefaultVocab)); err != nil {
		t.Fatalf("this test needs the llama.cpp tree: %v\nmake it with `just llama-setup` (or set BOXMAKER_TEST_LLAMA_SRC)", err)
	}
	return src
}

// The scripts .ci/llama-setup and the tests use, with the real vocabulary.
func TestSpellRealVocab(t *testing.T) {
	src := llamaSrc(t)
	for _, c := range []struct{ script, after string }{
		{toolScript, afterToolText},
		{"Hello! I am a tiny scripted test model.", ""},
		{"<think>\nLet me think.\n</think>\n\nHello.", ""},
		{"<tool_call>\n\n{\"name\":\"call_tool\",\"arguments\":{\"tool\":\"http_fetch\", \"arguments\": {}}}\n</tool_call>", ""},
	} {
		p, err := Spell(Options{LlamaSrc: src, Script: c.script, AfterTool: c.after})
		if err != nil {
			t.Errorf("%q: %v", c.script, err)
			continue
		}
		checkPath(t, p, p.Reply, c.script)
		if c.after != "" {
			checkPath(t, p, p.AfterTool, c.after)
		}
		if strings.HasPrefix(c.script, "<tool_call>") && p.text(p.Reply[0]) != "<tool_call>" {
			t.Errorf("the tool call does not start with the <tool_call> token: %q", p.text(p.Reply[0]))
		}
		if !strings.Contains(p.String(), "<|im_end|>") {
			t.Errorf("the listing names no end:\n%s", p)
		}
	}
	// The call the template itself renders cannot be spelled: it holds
	// sixteen quotes and only twelve tokens fit them. The error says where.
	rendered := "<tool_call>\n\n{\"name\": \"call_tool\", \"arguments\": {\"tool\": \"shell\", \"arguments\": {\"command\": \"id -u\"}}}\n</tool_call>"
	if _, err := Spell(Options{LlamaSrc: src, Script: rendered}); err == nil || !strings.Contains(err.Error(), `its "\"" characters`) {
		t.Errorf("the rendered call: %v", err)
	}
}
