// Command tinymodel writes a tiny GGUF chat model for tests against the real
// llama-server (package tinymodel says what the model is):
//
//	go run ./internal/tinymodel/cmd/tinymodel -llama-src CACHE/llama.cpp -out m.gguf \
//	    -script 'Hello! I am a tiny scripted test model.'
//
// -dry-run prints the scripts' token paths and writes nothing.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"boxmaker/internal/tinymodel"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tinymodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o tinymodel.Options
	var out, scriptFile, afterFile string
	var dry bool
	var scriptTokens string
	fs.StringVar(&o.LlamaSrc, "llama-src", os.Getenv("BOXMAKER_TEST_LLAMA_SRC"), "the llama.cpp tree (default $BOXMAKER_TEST_LLAMA_SRC)")
	fs.StringVar(&o.Vocab, "vocab", tinymodel.DefaultVocab, "vocab-only GGUF to take the tokenizer from, relative to the tree or absolute")
	fs.StringVar(&o.Template, "template", tinymodel.DefaultTemplate, "chat template file, relative to the tree or absolute (a thinking model: "+tinymodel.ThinkingTemplate+")")
	fs.StringVar(&out, "out", "", "the model file to write")
	fs.StringVar(&o.Script, "script", "", "answer exactly this text, then <|im_end|> (it may hold special tokens such as <tool_call>)")
	fs.StringVar(&scriptTokens, "script-tokens", "", "instead of -script: the answer as comma-separated token ids, which may repeat (say llama-server's /tokenize of a rendered tool call)")
	fs.StringVar(&scriptFile, "script-file", "", "read -script from this file")
	fs.StringVar(&o.AfterTool, "after-tool", "", "with -script: the answer once the prompt holds a tool response")
	fs.StringVar(&afterFile, "after-tool-file", "", "read -after-tool from this file")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the random weights")
	fs.IntVar(&o.Layers, "layers", 2, "layers")
	fs.IntVar(&o.Embd, "embd", 0, "embedding width, a multiple of 8 (0: 64, or enough for the scripts)")
	fs.IntVar(&o.Ctx, "ctx", 32768, "trained context length written to the file")
	fs.BoolVar(&dry, "dry-run", false, "print the scripts' token paths and write nothing")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tinymodel -llama-src DIR (-out FILE | -dry-run) [options]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (out == "") == !dry {
		fs.Usage()
		return 2
	}
	for _, f := range []struct {
		file string
		dst  *string
	}{{scriptFile, &o.Script}, {afterFile, &o.AfterTool}} {
		if f.file == "" {
			continue
		}
		b, err := os.ReadFile(f.file)
		if err != nil {
			fmt.Fprintf(stderr, "tinymodel: %v\n", err)
			return 1
		}
		*f.dst = string(b)
	}
	if scriptTokens != "" {
		for _, f := range strings.Split(scriptTokens, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				fmt.Fprintf(stderr, "tinymodel: -script-tokens: %v\n", err)
				return 2
			}
			o.ScriptTokens = append(o.ScriptTokens, id)
		}
	}
	if dry {
		p, err := tinymodel.Spell(o)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprint(stdout, p)
		return 0
	}
	start := time.Now()
	if err := tinymodel.Write(out, o); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "tinymodel: wrote %s in %.2fs\n", out, time.Since(start).Seconds())
	fmt.Fprintln(stdout, out)
	return 0
}
