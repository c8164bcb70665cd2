package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"boxmaker/internal/harness"
)

// step is one message of the llama demo and the model that answers it.
type step struct {
	say   string // what the owner types (and "y" for the approval)
	model harness.Model
}

// llamaSteps are the demo's three messages for home. A scripted tiny model
// answers one fixed text (then a second, once it has a tool's result), so
// each message has a model of its own. The spacing inside the calls is
// what lets each be spelled without repeating a token.
func llamaSteps(home string) []step {
	call := func(tool, args string) string {
		return "<tool_call>\n\n" + `{"name":"call_tool","arguments":{"tool": "` + tool + `",` + "\n" +
			`"arguments": {` + args + "\n}}}\n</tool_call>"
	}
	return []step{
		{"What do my notes say?\ny\n", harness.Model{
			Script:    call("read_file", `"path":"`+home+`/notes/today.md"`),
			AfterTool: "Done - your notes were read in a container, after your approval!"}},
		{"List the scratch folder.\n", harness.Model{
			Script:    call("shell", `"command":`+"\n"+` "ls -la","cwd":"`+home+`/scratch"`),
			AfterTool: "Your scratch folder, listed in a container!"}},
		{"Fetch a web page for me.\n", harness.Model{
			Script:    call("http_fetch", `"url":`+"\n"+`"https://example.com/"`),
			AfterTool: "That fetch was denied; no grant allows it!"}},
	}
}

// runLlama is the demo against llama.cpp's own llama-server: the same
// messages, grants and checks, each message answered by a scripted tiny
// model that internal/tinymodel writes in a fraction of a second.
func runLlama(bin string, keep bool) int {
	server, src, err := harness.LlamaPaths()
	if err != nil {
		return fail(err)
	}
	tool := filepath.Join(bin, "tinymodel")
	if _, err := os.Stat(tool); err != nil {
		return fail(fmt.Errorf("%s: %w (just demo --model llama builds it)", tool, err))
	}
	// The models' calls name paths under the home, so its name must be one
	// they can spell.
	home, err := harness.SpellableHome(func(home string) error {
		for _, s := range llamaSteps(home) {
			if err := harness.MakeModel(tool, src, s.model, "", true, io.Discard); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if !keep {
		defer os.RemoveAll(home)
	}
	logf, err := os.Create(filepath.Join(home, "demo.log"))
	if err != nil {
		return fail(err)
	}
	defer logf.Close()
	steps := llamaSteps(home)
	models := make([]string, len(steps))
	for i, s := range steps {
		models[i] = filepath.Join(home, "models", fmt.Sprintf("step%d.gguf", i+1))
		if err := harness.MakeModel(tool, src, s.model, models[i], false, logf); err != nil {
			return fail(err)
		}
	}

	say("boxmaker demo, in the throwaway home %s", home)
	say("The model server is llama.cpp's own llama-server, but the models are tiny scripted ones made here, NOT real models:")
	say("each answers one fixed text (and another once it has a tool's result), so every message gets a model and a session of its own.")
	say("The templating, tool-call parsing, streaming and prompt cache are llama-server's own; the calls' odd spacing")
	say("(\\u000a is a newline) is how a token table spells a call without writing any token twice.")
	say("Starting Podman's service, building the tool image, then brokerd, llama-server, inferproxy and loopd…")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	h, err := harness.Start(ctx, harness.Options{Bin: bin, Home: home, Log: logf, Llama: &harness.Llama{
		Server: server, Model: models[0], Args: []string{"--jinja", "-c", "8192", "-np", "1"}}})
	if err != nil {
		say("the harness did not start (its processes' output: %s)", logf.Name())
		return fail(err)
	}
	code := 0
	say("Everything is up after %.1f s. Grants: read_file of the notes asks you; shell in the scratch folder runs at once;", time.Since(start).Seconds())
	say("writing the notes is denied; http_fetch has no grant.")
	for i, s := range steps {
		fmt.Println()
		if i > 0 {
			// loopd restarts too: it learnt the served model at startup.
			if err := h.SwitchModel(ctx, models[i]); err != nil {
				say("switching the model: %v", err)
				code = 1
				break
			}
		}
		say("Model %d of %d, scripted to call %s:", i+1, len(steps), callOf(s.model.Script))
		if err := h.Bxctl(ctx, strings.NewReader(s.say), os.Stdout, os.Stdout, "chat"); err != nil {
			say("bxctl chat: %v", err)
			code = 1
		}
	}
	return finish(ctx, h, start, code)
}

// callOf is the tool a script calls.
func callOf(script string) string {
	_, rest, _ := strings.Cut(script, `"tool": "`)
	tool, _, _ := strings.Cut(rest, `"`)
	return tool
}
