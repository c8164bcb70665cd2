// Command demo is the README's main job: it starts the whole harness in a
// throwaway home (Podman's service, brokerd with the tool image, the
// stand-in model, inferproxy, loopd) and chats with it through bxctl chat,
// so a newcomer sees a tool call, an approval prompt, a real container run
// and a denial, then audit verify passing on the log it produced. Then it
// stops everything, leaving no process or container behind.
package main

import (
	"context"
	"errors"
	"flag"
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

// script is what the demo says when nobody types: the notes (an ask grant:
// approved with y), the scratch folder (an auto grant: runs at once), and a
// web page (no grant: denied).
const script = "What do my notes say?\ny\nList the scratch folder.\nFetch a web page for me.\n"

func main() { os.Exit(run()) }

func run() int {
	bin := flag.String("bin", "bin", "the folder with boxmaker, its role links and fakellama (just build)")
	interactive := flag.Bool("interactive", false, "type to the model yourself instead of the demo's script")
	keep := flag.Bool("keep", false, "keep the throwaway home after stopping")
	model := flag.String("model", "stand-in", "the model: stand-in (fakellama) or llama (llama.cpp's llama-server with scripted tiny models; just llama-setup)")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err != nil {
		return fail(err)
	}
	switch {
	case *model == "llama" && *interactive:
		return fail(errors.New("--interactive needs the stand-in model: a scripted tiny model answers the same whatever you type"))
	case *model == "llama":
		return runLlama(abs, *keep)
	case *model != "stand-in":
		return fail(fmt.Errorf("--model %q: the models are stand-in and llama", *model))
	}
	home, err := os.MkdirTemp("", "bxdemo-")
	if err != nil {
		return fail(err)
	}
	if !*keep {
		defer os.RemoveAll(home)
	}
	logf, err := os.Create(filepath.Join(home, "demo.log"))
	if err != nil {
		return fail(err)
	}
	defer logf.Close()

	say("boxmaker demo, in the throwaway home %s", home)
	say("The model is the in-repository scripted stand-in, NOT a real model: it answers by simple rules.")
	say("Starting Podman's service, building the tool image, then brokerd, the stand-in model, inferproxy and loopd…")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	h, err := harness.Start(ctx, harness.Options{Bin: abs, Home: home, Log: logf})
	if err != nil {
		say("the harness did not start (its processes' output: %s)", logf.Name())
		return fail(err)
	}
	code := 0
	say("Everything is up after %.1f s. Grants: read_file of the notes asks you; shell in the scratch folder runs at once;", time.Since(start).Seconds())
	say("writing the notes is denied; http_fetch has no grant.")
	fmt.Println()

	var in io.Reader = strings.NewReader(script)
	if *interactive {
		say("Type to the model; try \"read my notes\", \"list the scratch folder\", \"fetch a web page\". Ctrl-D ends.")
		in = os.Stdin
	}
	if err := h.Bxctl(ctx, in, os.Stdout, os.Stdout, "chat"); err != nil {
		say("bxctl chat: %v", err)
		code = 1
	}
	return finish(ctx, h, start, code)
}

// finish verifies the audit log the run wrote and stops everything.
func finish(ctx context.Context, h *harness.Harness, start time.Time, code int) int {
	fmt.Println()
	say("The audit log, verified by bxctl audit verify:")
	if err := h.Bxctl(ctx, nil, os.Stdout, os.Stdout, "audit", "verify", "--home", h.Home); err != nil {
		say("bxctl audit verify: %v", err)
		code = 1
	}
	// Stop checks for containers brokerd left and says so.
	if err := h.Stop(); err != nil {
		say("stopping: %v", err)
		return 1
	}
	say("Stopped: no process and no container left behind (%.1f s in all).", time.Since(start).Seconds())
	return code
}

func say(format string, args ...any) { fmt.Printf("== "+format+"\n", args...) }

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	return 1
}
