package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
	"boxmaker/internal/tinymodel"
)

// The scripted models of the end-to-end suite against the real
// llama-server. Each answers one fixed text, or a second one once the
// prompt holds a tool response (tinymodel's AfterTool).
var (
	helloModel = harness.Model{Script: "Hello! I am a tiny scripted model in llama.cpp."}
	thinkModel = harness.Model{Template: harness.ThinkingTemplate, Script: "<think>\nLet me think.\n</think>\n\nHello."}
)

// readHostile reads notes/hostile.md under home (an ask grant) through
// call_tool, then says so. The spacing is what lets it be spelled without
// a repeated token.
func readHostile(home string) harness.Model {
	return harness.Model{
		Script: "<tool_call>\n\n" + `{"name":"call_tool","arguments":{"tool": "read_file",` + "\n" +
			`"arguments": {"path":"` + home + `/notes/hostile.md"` + "\n}}}\n</tool_call>",
		AfterTool: "I have read the file for you.",
	}
}

// readHostileRendered is readHostile's call exactly as Qwen2.5's template
// renders it, in llama-server's own tokens (tinymodel's ScriptTokens: the
// tokens repeat), so the prompt that carries the call back matches the
// slot's cache token for token.
func readHostileRendered(t *testing.T, r *llamaRun) harness.Model {
	call := "<tool_call>\n" + `{"name": "call_tool", "arguments": {"tool": "read_file", "arguments": {"path": "` +
		r.home + `/notes/hostile.md"}}}` + "\n</tool_call>"
	m := harness.Model{AfterTool: readHostile(r.home).AfterTool}
	for _, tk := range r.tokenize(t, call) {
		m.ScriptTokens = append(m.ScriptTokens, tk.ID)
	}
	return m
}

// model writes m into a temporary folder and returns its path: the one
// place that says how the suite's models are made.
func model(t testing.TB, m harness.Model) string {
	t.Helper()
	_, src, err := harness.LlamaPaths()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := tinymodel.Write(path, tinyOptions(src, m)); err != nil {
		t.Fatal(err)
	}
	return path
}

func tinyOptions(src string, m harness.Model) tinymodel.Options {
	return tinymodel.Options{LlamaSrc: src, Template: m.Template, Script: m.Script, ScriptTokens: m.ScriptTokens, AfterTool: m.AfterTool}
}

// llamaRun is a harness whose model is the real llama-server.
type llamaRun struct {
	h       *harness.Harness
	home    string // Options.Home
	rec     *recorder
	server  string // llama-server's own URL, for /tokenize
	prompts string // --log-prompts-dir: every prompt it rendered
	log     *syncbuf.Buffer
}

// startLlama starts every role as its own process, with llama-server on
// first's model, in a home whose name the suite's scripts can spell, and the recorder between inferproxy and
// the server. It fails, naming the setup command, when a piece is missing.
func startLlama(t *testing.T, first harness.Model) *llamaRun {
	t.Helper()
	server, src, err := harness.LlamaPaths()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("no podman on PATH: install it with `just podman-setup` (%v)", err)
	}
	bin := build(t)
	path := model(t, first)
	home, err := harness.SpellableHome(func(home string) error {
		_, err := tinymodel.Spell(tinyOptions(src, readHostile(home)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	r := &llamaRun{home: home, prompts: filepath.Join(home, "prompts"), log: &syncbuf.Buffer{}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r.h, err = harness.Start(ctx, harness.Options{Bin: bin, Home: home, Log: r.log,
		// -t 1: the machines running the gate have two cores to share.
		Llama: &harness.Llama{Server: server, Model: path,
			Args: []string{"--jinja", "-c", "8192", "-np", "1", "-t", "1", "--log-prompts-dir", r.prompts}},
		Upstream: func(addr string) (string, error) {
			var url string
			r.rec, url = startRecorder(t, addr)
			r.server = "http://" + addr
			return url, nil
		}})
	if err != nil {
		t.Fatalf("%v\n%s", err, r.log.String())
	}
	t.Cleanup(func() {
		if err := r.h.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if t.Failed() {
			t.Logf("the harness's output:\n%s", r.log.String())
		}
	})
	return r
}

// say runs bxctl chat --say text (in session, when not "") and returns
// its output and the session it named.
func (r *llamaRun) say(t *testing.T, session, text string) (out, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"chat", "--say", text}
	if session != "" {
		args = append(args, "--session", session)
	}
	var b syncbuf.Buffer
	if err := r.h.Bxctl(ctx, nil, &b, &b, args...); err != nil {
		t.Fatalf("bxctl %s: %v\n%s", strings.Join(args, " "), err, b.String())
	}
	m := sessionLine.FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("no session line:\n%s", b.String())
	}
	return b.String(), m[1]
}

// token is one token of a prompt as llama-server reads it.
type token struct {
	ID    int
	Piece string
	At    int // byte offset in the text
}

// tokenize asks llama-server itself for text's tokens, special tokens
// parsed as in a prompt, with their pieces.
func (r *llamaRun) tokenize(t *testing.T, text string) []token {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": text, "with_pieces": true, "parse_special": true})
	resp, err := http.Post(r.server+"/tokenize", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []struct {
			ID    int             `json:"id"`
			Piece json.RawMessage `json:"piece"`
		} `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("/tokenize: %v", err)
	}
	var toks []token
	at := 0
	for _, tk := range out.Tokens {
		// A piece that is not whole UTF-8 comes back as a list of bytes.
		var s string
		if json.Unmarshal(tk.Piece, &s) != nil {
			var bs []byte
			if err := json.Unmarshal(tk.Piece, &bs); err != nil {
				var nums []int
				json.Unmarshal(tk.Piece, &nums)
				for _, n := range nums {
					bs = append(bs, byte(n))
				}
			}
			s = string(bs)
		}
		toks = append(toks, token{ID: tk.ID, Piece: s, At: at})
		at += len(s)
	}
	if at != len(text) {
		t.Fatalf("/tokenize's pieces cover %d of the text's %d bytes", at, len(text))
	}
	return toks
}

// loggedPrompts are the prompts llama-server rendered, oldest first.
func (r *llamaRun) loggedPrompts(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.prompts, "*.txt"))
	var out []string
	for _, f := range files { // named by the millisecond, so sorted
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// reuse is one chat request's cache figure: cache_n, the server's own
// count of prompt tokens it took from the slot's cache, against what the
// slot held from the request before: that request's prompt (cache_n +
// prompt_n), and with it the answer it wrote, all of whose tokens but the
// last (sampled, never evaluated) are in the slot too. The second is
// loopd's own expectation (a shortfall is a CacheLoss in the session log);
// it is met in full only when the next prompt renders the answer as the
// very tokens the model wrote.
type reuse struct {
	What   string
	CacheN int
	Prompt int // the previous request's prompt tokens
	Slot   int // and its answer's tokens but the last
}

// PromptRatio and SlotRatio are cache_n over each expectation; cache_n may
// pass Prompt (by the answer's tokens), so that ratio stops at 1.
func (u reuse) PromptRatio() float64 { return float64(min(u.CacheN, u.Prompt)) / float64(u.Prompt) }
func (u reuse) SlotRatio() float64   { return float64(u.CacheN) / float64(u.Slot) }

func (u reuse) String() string {
	return fmt.Sprintf("%-30s cache_n %4d: of the previous prompt's %4d, %.3f; of the slot's %4d, %.3f",
		u.What, u.CacheN, u.Prompt, u.PromptRatio(), u.Slot, u.SlotRatio())
}

// reuses pairs each chat request in chats after the first with the one
// before it on the same slot.
func reuses(t *testing.T, chats []exchange, what []string) []reuse {
	t.Helper()
	if len(what) != len(chats)-1 {
		t.Fatalf("%d chat requests, %d names for their figures", len(chats), len(what))
	}
	var out []reuse
	for i := 1; i < len(chats); i++ {
		prev, cur := chats[i-1], chats[i]
		if prev.Timings == nil || cur.Timings == nil || prev.Slot != cur.Slot {
			t.Fatalf("request %d: no timings, or another slot: %+v then %+v", i, prev, cur)
		}
		p := prev.Timings.CacheN + prev.Timings.PromptN
		out = append(out, reuse{What: what[i-1], CacheN: cur.Timings.CacheN, Prompt: p, Slot: p + max(prev.Timings.PredictedN-1, 0)})
	}
	return out
}
