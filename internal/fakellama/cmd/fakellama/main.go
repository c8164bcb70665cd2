// Command fakellama runs the in-repository stand-in for llama-server with
// the demo's scripted model. It is development tooling for the demo and
// tests, built on its own: the boxmaker binary does not carry it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"boxmaker/internal/fakellama"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	const prog = "fakellama"
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "TCP address to listen on")
	addrFile := fs.String("addr-file", "", "write the address listened on to this file")
	notes := fs.String("notes", "/tmp/notes", "the demo's notes folder (an ask grant for read_file)")
	scratch := fs.String("scratch", "/tmp/scratch", "the demo's scratch folder (an auto grant for shell)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return 1
		}
	}
	srv := fakellama.New(fakellama.Options{Script: fakellama.DemoScript(fakellama.DemoPaths{Notes: *notes, Scratch: *scratch})})
	fmt.Fprintf(stdout, "fakellama: the demo's scripted stand-in model (not a real model) on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 1
	}
	return 0
}
