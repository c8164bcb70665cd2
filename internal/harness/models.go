package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// LlamaHome is the fixed Options.Home of a harness that runs llama-server
// with scripted models. A scripted model's tool call names a path in the
// owner's folders, spelled into its weights, and a token-table model cannot
// repeat a token, so the path must be short and known when the model is
// made: with a fixed home every model file is the same on every run and
// cached, and a random temporary name (repeated digits) would often be
// unspellable. ClaimHome makes the one home safe to share.
const LlamaHome = "/tmp/bxllama"

// ClaimHome waits (up to the lock holder's run) for an exclusive lock on
// dir+".lock", then removes whatever a killed earlier run left in dir, so
// only one harness at a time uses the fixed home. release unlocks it; the
// caller removes dir before that.
func ClaimHome(dir string) (release func(), err error) {
	f, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("harness: locking %s.lock: %w", dir, err)
	}
	// A run killed before Stop leaves the overlay mount of its Podman
	// storage, which keeps the folder from being removed.
	_ = syscall.Unmount(filepath.Join(dir, "home", "podman", "storage", "overlay"), syscall.MNT_DETACH)
	if err := os.RemoveAll(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("harness: clearing %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// Model is one scripted tiny model: a real tokenizer (Qwen2's) and chat
// template, with weights arranged so that it answers Script every time.
type Model struct {
	// Template is a chat template file of the llama.cpp tree ("" for
	// Qwen2.5's).
	Template string
	// Script is the whole answer; it may hold special tokens such as
	// <tool_call>, and no token twice.
	Script string
}

// Qwen3Template is the thinking model's template, which puts <think>…</think>
// before the answer and which llama-server parses into reasoning_content.
const Qwen3Template = "models/templates/Qwen-Qwen3-0.6B.jinja"

// Llama paths: where just llama-setup (.ci/llama-setup) leaves llama-server
// and the llama.cpp tree, and the environment that overrides them.
const (
	LlamaCacheDefault = "/var/cache/boxmaker/llama"
	LlamaCacheEnv     = "BOXMAKER_LLAMA_CACHE"
	LlamaServerEnv    = "BOXMAKER_TEST_LLAMA_SERVER"
	SharedEnv         = "BOXMAKER_SHARED"
)

// LlamaCache is the cache folder: $BOXMAKER_LLAMA_CACHE or the default.
func LlamaCache() string {
	if c := os.Getenv(LlamaCacheEnv); c != "" {
		return c
	}
	return LlamaCacheDefault
}

// LlamaServer is the llama-server binary: $BOXMAKER_TEST_LLAMA_SERVER or
// the cache's bin/llama-server. It fails, naming just llama-setup, when the
// file is not there.
func LlamaServer() (string, error) {
	bin := os.Getenv(LlamaServerEnv)
	if bin == "" {
		bin = filepath.Join(LlamaCache(), "bin", "llama-server")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no llama-server at %s (%v): build it with `just llama-setup` (or set %s)", bin, err, LlamaServerEnv)
	}
	return bin, nil
}

// MakeModel returns the path of m's GGUF file in the cache's models/e2e/,
// making it first (about 7 s on two cores) unless a file for the same
// script, template and maker is there. The maker is the reference script
// make-tiny-model of the shared folder (shared: "" finds it from
// $BOXMAKER_SHARED or beside the repository), the same one just
// llama-setup runs; log receives its output.
func MakeModel(m Model, shared string, log io.Writer) (string, error) {
	if shared == "" {
		var err error
		if shared, err = sharedDir(); err != nil {
			return "", err
		}
	}
	maker := filepath.Join(shared, "llama", "make-tiny-model")
	src, err := os.ReadFile(maker)
	if err != nil {
		return "", fmt.Errorf("harness: the model maker: %w (set %s to the shared folder; `just llama-setup` needs it too)", err, SharedEnv)
	}
	sum := sha256.New()
	for _, part := range [][]byte{src, []byte(m.Template), []byte(m.Script)} {
		fmt.Fprintf(sum, "%d:", len(part))
		sum.Write(part)
	}
	cache := LlamaCache()
	out := filepath.Join(cache, "models", "e2e", hex.EncodeToString(sum.Sum(nil))[:24]+".gguf")
	if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	args := []string{cache, "--out", tmp, "--script", m.Script}
	if m.Template != "" {
		args = append(args, "--template", m.Template)
	}
	cmd := exec.Command(maker, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("harness: make-tiny-model for %q: %w (does `just llama-setup` pass?)", m.Script, err)
	}
	return out, os.Rename(tmp, out)
}

// sharedDir is $BOXMAKER_SHARED, or the folder "shared" beside the
// repository that holds the working directory (as .ci/llama-setup finds it).
func sharedDir() (string, error) {
	if s := os.Getenv(SharedEnv); s != "" {
		return s, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(dir), "shared"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("harness: no go.mod above the working directory, so no shared folder beside it; set " + SharedEnv)
		}
		dir = parent
	}
}
