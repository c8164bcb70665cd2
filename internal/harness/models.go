package harness

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Where just llama-setup (.ci/llama-setup) leaves llama-server and the
// llama.cpp tree (vocabularies and chat templates), and the variables it
// prints, which override them.
const (
	LlamaCache     = "/var/cache/boxmaker/llama"
	LlamaServerEnv = "BOXMAKER_TEST_LLAMA_SERVER"
	LlamaSrcEnv    = "BOXMAKER_TEST_LLAMA_SRC"
)

// LlamaPaths are the llama-server binary and the llama.cpp tree. It fails,
// naming just llama-setup, when either is missing.
func LlamaPaths() (server, src string, err error) {
	server, src = os.Getenv(LlamaServerEnv), os.Getenv(LlamaSrcEnv)
	if server == "" {
		server = filepath.Join(LlamaCache, "bin", "llama-server")
	}
	if src == "" {
		src = filepath.Join(LlamaCache, "llama.cpp")
	}
	for _, p := range []string{server, filepath.Join(src, "models")} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("the real llama-server needs %s (%v): build it with `just llama-setup` (or set %s and %s)",
				p, err, LlamaServerEnv, LlamaSrcEnv)
		}
	}
	return server, src, nil
}

// Model is one scripted tiny model (internal/tinymodel): Qwen2's real
// tokenizer and a real chat template, with weights arranged so that it
// answers Script every time, or AfterTool once the prompt holds a tool
// response.
type Model struct {
	Template string // a chat template of the llama.cpp tree; "" for Qwen2.5's
	Script   string
	// ScriptTokens, instead of Script, is the answer as token ids, which
	// may repeat: a tool call exactly as the template renders it, in the
	// server's own tokens, so the next prompt's cache matches it.
	ScriptTokens []int
	AfterTool    string
}

// ThinkingTemplate is Qwen3's template: the model writes <think>…</think>
// before its answer, and llama-server parses that into reasoning_content.
const ThinkingTemplate = "models/templates/Qwen-Qwen3-0.6B.jinja"

// MakeModel writes m to out with the tinymodel command at tool (built from
// internal/tinymodel/cmd/tinymodel: the harness runs the project's
// programs, it links none of them), in about 0.3 s; dry only spells the
// scripts, which says whether they can be made at all.
func MakeModel(tool, src string, m Model, out string, dry bool, log io.Writer) error {
	args := []string{"-llama-src", src, "-script", m.Script}
	if len(m.ScriptTokens) > 0 {
		ids := make([]string, len(m.ScriptTokens))
		for i, id := range m.ScriptTokens {
			ids[i] = strconv.Itoa(id)
		}
		args = []string{"-llama-src", src, "-script-tokens", strings.Join(ids, ",")}
	}
	if dry {
		args = append(args, "-dry-run")
	} else {
		args = append(args, "-out", out)
	}
	if m.Template != "" {
		args = append(args, "-template", m.Template)
	}
	if m.AfterTool != "" {
		args = append(args, "-after-tool", m.AfterTool)
	}
	cmd := exec.Command(tool, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("harness: tinymodel for %q: %w", m.Script, err)
	}
	return nil
}

// SpellableHome creates a new folder for Options.Home, named /tmp/bx and
// five random letters, that fits: a scripted model's tool call names a path
// under the home, spelled into its weights, and a token table cannot repeat
// a token, so a name is drawn until fits (spelling every script with that
// home) accepts it. A temporary name of digits would rarely do: Qwen's
// tokenizer reads each digit as its own token.
func SpellableHome(fits func(home string) error) (string, error) {
	var last error
	for range 40 {
		b := []byte("/tmp/bx")
		for range 5 {
			b = append(b, byte('a'+rand.IntN(26)))
		}
		home := string(b)
		if last = fits(home); last != nil {
			continue
		}
		if err := os.Mkdir(home, 0o700); err != nil {
			if errors.Is(err, os.ErrExist) {
				continue
			}
			return "", fmt.Errorf("harness: %w", err)
		}
		return home, nil
	}
	return "", fmt.Errorf("harness: no home name in 40 draws lets every script be spelled; the last: %w", last)
}
