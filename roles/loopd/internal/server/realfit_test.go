package server

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"boxmaker/internal/syncbuf"
	"boxmaker/roles/loopd/internal/config"
	"boxmaker/roles/loopd/internal/sessionlog"
	"boxmaker/wire"
)

// Issue 16 items 2 and 4 against the real llama-server, through inferproxy:
// what does not fit the context, and the answer limit. The model has
// random weights (its answers never end by themselves) and Qwen2.5's real
// tokenizer and template; the server samples with a fixed seed, so a run
// is repeatable.

// randomModel has random weights (.ci/llama-setup makes it).
func randomModel(t *testing.T) string { return cacheModel(t, "random.gguf") }

// startLlamaCtx runs llama-server on model with a context of nctx tokens
// and a fixed sampling seed.
func startLlamaCtx(t *testing.T, model string, nctx int) *realLlama {
	t.Helper()
	return launchLlama(t, model, "-c", fmt.Sprint(nctx), "-np", "1", "--seed", "1")
}

// prompts are the prompts llama-server has logged so far, in order.
func (l *realLlama) promptTexts(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(l.prompts, "*.txt"))
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// liveLoopd is loopd serving until stop.
type liveLoopd struct {
	cfg    config.Config
	stderr *syncbuf.Buffer
	cancel context.CancelFunc
	done   chan error
}

func runLoopd(t *testing.T, cfg config.Config) *liveLoopd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &liveLoopd{cfg: cfg, stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		d.done <- Run(ctx, Options{Config: cfg, Stderr: d.stderr, Port: hostilePort{"ok"}, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-d.done:
		t.Fatalf("loopd ended: %v\n%s", err, d.stderr.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("loopd did not start:\n%s", d.stderr.String())
	}
	t.Cleanup(d.stop)
	return d
}

func (d *liveLoopd) stop() {
	d.cancel()
	if d.done != nil {
		<-d.done
		d.done = nil
	}
}

// say runs one turn on loop.sock and returns its events.
func (d *liveLoopd) say(t *testing.T, id *wire.SessionID, text string) []wire.TurnEvent {
	t.Helper()
	c, err := net.Dial("unix", d.cfg.Listen.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Minute))
	if err := wire.WriteEnvelope(c, wire.Request(1, wire.Say{Session: id, Text: text})); err != nil {
		t.Fatal(err)
	}
	var evs []wire.TurnEvent
	for {
		e, err := wire.ReadEnvelope(c)
		if err != nil {
			t.Fatalf("turn %q broke off after %#v: %v\n%s", text, evs, err, d.stderr.String())
		}
		evs = append(evs, e.Msg.(wire.TurnEvent))
		if e.Final {
			return evs
		}
	}
}

func lastEvent[T wire.TurnEvent](t *testing.T, evs []wire.TurnEvent) T {
	t.Helper()
	v, ok := evs[len(evs)-1].(T)
	if !ok {
		t.Fatalf("the turn ended with %#v, not a %T (events %#v)", evs[len(evs)-1], v, evs)
	}
	return v
}

func cutEvent(evs []wire.TurnEvent) *wire.TurnAnswerCut {
	for _, ev := range evs {
		if c, ok := ev.(wire.TurnAnswerCut); ok {
			return &c
		}
	}
	return nil
}

func epochRecords(t *testing.T, cfg config.Config, id wire.SessionID, epoch wire.Epoch) []wire.LogRecord {
	t.Helper()
	log, err := sessionlog.Read(sessionlog.Path(cfg.Paths.Home, id, epoch))
	if err != nil {
		t.Fatal(err)
	}
	return log.Records
}

// A message larger than the context: refused with its size and the limit
// (the server's and its tokenizer's numbers), never sent again, the next
// turn answered with the cache reused in full, before and after a restart
// of loopd. Every answer is cut at the answer limit, and the owner is told.
// The model is the scripted reply model, whose answer (about ten tokens,
// spelled as the server's tokenizer spells it) is cut at four: a random
// model's cut answers often re-tokenize differently from how they were
// generated, and their replay then misses the cache for reasons of the
// model's, not loopd's.
func TestRealLlamaMessageLargerThanContext(t *testing.T) {
	l := startLlamaCtx(t, replyModel(t), 2048)
	cfg, _ := setup(t)
	cfg.Model.MaxAnswerTokens = 4
	cfg.Model.ReplyTimeoutS = 60
	startInferproxy(t, l.url, cfg.Model.Socket)
	d := runLoopd(t, cfg)

	evs := d.say(t, nil, "hello")
	id := evs[0].(wire.TurnSession).Session
	lastEvent[wire.TurnReply](t, evs)
	if c := cutEvent(evs); c == nil || *c != (wire.TurnAnswerCut{Tokens: 4, Reason: wire.CutAnswerLimit}) {
		t.Fatalf("turn 1 was not cut at the limit: %#v", evs)
	}

	const marker = "ZEBRA"
	huge := strings.Repeat(marker+" and a lot more words to read, ", 300)
	msg := lastEvent[wire.TurnFailed](t, d.say(t, &id, huge)).Message
	var m, nPrompt, nctx int
	if _, err := fmt.Sscanf(msg, "your message was not sent: it is about %d tokens, and the request with it would be %d tokens, "+
		"more than the model's context of %d;", &m, &nPrompt, &nctx); err != nil || nctx != 2048 || nPrompt <= 2048 || m < 2000 {
		t.Fatalf("refusal %q (%v)", msg, err)
	}
	if !strings.HasSuffix(msg, "see docs/runbook.md#message-too-long") {
		t.Fatalf("refusal %q", msg)
	}
	t.Logf("refused: %s", msg)

	evs = d.say(t, &id, "hi again")
	lastEvent[wire.TurnReply](t, evs)
	d.stop()
	d = runLoopd(t, cfg)
	evs = d.say(t, &id, "still there?")
	lastEvent[wire.TurnReply](t, evs)

	prompts := l.promptTexts(t)
	for i, p := range prompts {
		if strings.Contains(p, marker) && !strings.Contains(p, "still there?") && !strings.Contains(p, "hi again") {
			continue // the refused request itself
		}
		if strings.Contains(p, marker) {
			t.Fatalf("prompt %d of %d carries the refused message", i, len(prompts))
		}
	}
	recs := epochRecords(t, cfg, id, 0)
	var refused, cuts int
	for _, r := range recs {
		switch v := r.(type) {
		case wire.RefusedRecord:
			refused++
			if v.NCtx != 2048 || v.PromptTokens != uint64(nPrompt) {
				t.Fatalf("refused record %+v", v)
			}
		case wire.AnswerCut:
			cuts++
		}
	}
	if refused != 1 || cuts != 3 {
		t.Fatalf("%d refused, %d cut:\n%s", refused, cuts, d.stderr.String())
	}
	checkCutReplays(t, recs)
	t.Logf("requests sent (.sent):\n%s", readSent(t, cfg, id))
}

// checkCutReplays checks that each cut answer, replayed by the next
// request, kept the server's cache whole: no cache_loss follows it. The one
// exception is a random model's own: it writes byte tokens that do not
// make UTF-8, which the server sends as U+FFFD, so no replay can give the
// server back the tokens it generated, and loopd reports the loss. (A real
// model writes UTF-8; the server holds a character back until it is whole.)
func checkCutReplays(t *testing.T, recs []wire.LogRecord) {
	t.Helper()
	var prev *wire.AssistantRecord
	loss := false
	full, lost := 0, 0
	check := func() {
		if prev == nil {
			return
		}
		bad := strings.ContainsRune(*prev.Content, '\uFFFD')
		switch {
		case loss && !bad:
			t.Errorf("a cache loss after an answer replayed as generated: %q", *prev.Content)
		case loss:
			lost++
		default:
			full++
		}
		if !loss && bad {
			t.Logf("no loss after an answer with U+FFFD: %q", *prev.Content)
		}
	}
	for _, r := range recs {
		switch v := r.(type) {
		case wire.CacheLoss:
			loss = true
			t.Logf("cache loss %+v after %q", v, *prev.Content)
		case wire.AssistantRecord:
			check()
			prev, loss = &v, false
		}
	}
	if full == 0 {
		t.Fatal("no answer was replayed whole, so nothing was checked")
	}
	t.Logf("cut answers replayed: %d with the cache whole, %d with a loss explained by U+FFFD", full, lost)
}

// readSent is the epoch's .sent entries, for the log.
func readSent(t *testing.T, cfg config.Config, id wire.SessionID) string {
	t.Helper()
	b, err := os.ReadFile(sessionlog.SentPath(sessionlog.Path(cfg.Paths.Home, id, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}

// The lock of issue 16 at a small context (-c 512, where the prompt prefix
// alone is about 420 tokens): the first answer fills the context, the next
// turn starts epoch 1 from a summary, and a message that does not fit after
// that start is refused with what to do about it; a message that fits is
// still answered, and after a restart the refused message is never sent.
func TestRealLlamaSmallContextRollover(t *testing.T) {
	l := startLlamaCtx(t, randomModel(t), 512)
	cfg, _ := setup(t)
	cfg.Model.ReplyTimeoutS = 60
	startInferproxy(t, l.url, cfg.Model.Socket)
	d := runLoopd(t, cfg)

	evs := d.say(t, nil, "hi")
	id := evs[0].(wire.TurnSession).Session
	lastEvent[wire.TurnReply](t, evs)
	if c := cutEvent(evs); c == nil || c.Reason != wire.CutContextFull {
		t.Fatalf("turn 1 did not fill the context: %#v", evs)
	}

	const marker = "GIRAFFE"
	long := strings.Repeat(marker+" says hello, ", 12)
	evs = d.say(t, &id, long)
	msg := lastEvent[wire.TurnFailed](t, evs).Message
	if evs[0].(wire.TurnSession).Epoch != 1 || !strings.Contains(msg, "epoch 1's start (the system prompt, memory/core.md and the tool definitions, "+
		"and the summary of epoch 0) takes about ") || !strings.Contains(msg, "past the 384 at which an epoch ends ([model] epoch_percent of the model's 512)") ||
		!strings.HasSuffix(msg, "see docs/runbook.md#epoch-start-too-large") {
		t.Fatalf("turn 2: %#v\n%s", evs, d.stderr.String())
	}
	t.Logf("refused: %s", msg)

	// Not locked: a short message is answered.
	lastEvent[wire.TurnReply](t, d.say(t, &id, "ok"))
	d.stop()
	d = runLoopd(t, cfg)
	lastEvent[wire.TurnReply](t, d.say(t, &id, "ok"))
	prompts := l.promptTexts(t)
	n := 0
	for _, p := range prompts {
		if strings.Contains(p, marker) {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("%d prompts carry the refused message", n)
	}
	t.Logf("loopd:\n%s", d.stderr.String())
}

// A tool result larger than the context left is withheld, measured with
// the server's own tokenizer: the model reads a note with its size, the
// owner sees the outcome as truncated, and no prompt carries the result.
// The model here calls http_fetch after every message.
func TestRealLlamaToolResultTooLarge(t *testing.T) {
	_, model := llamaPaths(t)
	l := startLlamaCtx(t, model, 2048)
	cfg, _ := setup(t)
	cfg.Model.MaxSteps = 2
	cfg.Model.ReplyTimeoutS = 60
	startInferproxy(t, l.url, cfg.Model.Socket)
	const marker = "OKAPI"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	ready := make(chan struct{})
	var stderr syncbuf.Buffer
	big := strings.Repeat(marker+" is a forest animal related to the giraffe. ", 200)
	go func() {
		done <- Run(ctx, Options{Config: cfg, Stderr: &stderr, Port: hostilePort{big}, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("loopd ended: %v\n%s", err, stderr.String())
	}
	d := &liveLoopd{cfg: cfg, stderr: &stderr}
	evs := d.say(t, nil, "fetch it")
	var outs []wire.TurnToolOutcome
	for _, ev := range evs {
		if o, ok := ev.(wire.TurnToolOutcome); ok {
			outs = append(outs, o)
		}
	}
	if len(outs) == 0 || !outs[0].Truncated || outs[0].Status != wire.ToolResult {
		t.Fatalf("events %#v\n%s", evs, stderr.String())
	}
	var noted bool
	for _, p := range l.promptTexts(t) {
		if strings.Contains(p, marker) {
			t.Fatal("a prompt carries the withheld result")
		}
		noted = noted || strings.Contains(p, "This result was not given to you: it is about ")
	}
	if !noted || !strings.Contains(stderr.String(), "see docs/runbook.md#tool-result-too-large") {
		t.Fatalf("no prompt carries the note:\n%s", stderr.String())
	}
	t.Logf("loopd:\n%s", stderr.String())
	cancel()
	<-done
}
