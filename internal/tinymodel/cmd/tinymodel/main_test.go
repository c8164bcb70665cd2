package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/internal/tinymodel"
)

func llamaSrc(t *testing.T) string {
	t.Helper()
	src := os.Getenv("BOXMAKER_TEST_LLAMA_SRC")
	if src == "" {
		src = "/var/cache/boxmaker/llama/llama.cpp"
	}
	if _, err := os.Stat(filepath.Join(src, tinymodel.DefaultVocab)); err != nil {
		t.Fatalf("this test needs the llama.cpp tree: %v\nmake it with `just llama-setup` (or set BOXMAKER_TEST_LLAMA_SRC)", err)
	}
	return src
}

func TestRun(t *testing.T) {
	src := llamaSrc(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "script.txt")
	if err := os.WriteFile(script, []byte("Hi there."), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args       []string
		code       int
		out, err   string
		wantsModel bool
	}{
		{[]string{"-llama-src", src, "-dry-run", "-script-file", script}, 0, `"Hi"`, "", false},
		{[]string{"-llama-src", src, "-out", filepath.Join(dir, "m.gguf"), "-script", "Hi."}, 0, "m.gguf", "wrote", true},
		{[]string{"-llama-src", src, "-dry-run", "-script-tokens", "27, 87,87,88"}, 0, `"x"`, "", false},
		{[]string{"-llama-src", src, "-dry-run", "-script-tokens", "27,x"}, 2, "", "-script-tokens", false},
		{[]string{"-llama-src", src, "-dry-run", "-script-tokens", "27", "-script", "a"}, 1, "", "not both", false},
		{[]string{"-llama-src", src}, 2, "", "usage", false},
		{[]string{"-llama-src", src, "-dry-run", "-out", "x"}, 2, "", "usage", false},
		{[]string{"-llama-src", src, "-dry-run", "-script", "a\n"}, 1, "", "cannot be spelled", false},
		{[]string{"-llama-src", src, "-dry-run", "-script-file", filepath.Join(dir, "none")}, 1, "", "no such file", false},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.out) || !strings.Contains(stderr.String(), c.err) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, stdout.String(), stderr.String())
		}
		if c.wantsModel {
			if _, err := tinymodel.ReadGGUFFile(filepath.Join(dir, "m.gguf")); err != nil {
				t.Errorf("%q: %v", c.args, err)
			}
		}
	}
}
