// Command gate runs the repository's own checks, the ones no standard tool
// does: go run ./internal/gate <check>... (or "all"). Each check prints its
// problems, one per line; the exit status is 1 if any check found a problem
// or could not run. A check that cannot run (a missing tool, no network for
// an undownloaded module) fails: the gate never skips.
//
// The gate is development tooling: it is exempt from the design card's
// import rules and is never linked into the boxmaker binary.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// Reports go to stdout, problems included, so that they stay in order in
// a log; stderr is for the gate's own usage errors.

// A check looks at the repository in dir and returns its problems; an error
// means it could not look.
type check struct {
	name  string
	about string
	run   func(dir string) ([]string, error)
}

var checks = []check{
	{"gofmt", "gofmt -l on the Go files git tracks is empty", checkGofmt},
	{"imports", "the design card's import rules, from go list", checkImports},
	{"filelen", "no tracked .go file is over 500 lines", checkFileLen},
	{"deps", "every go.mod requirement is in docs/dependencies.md with its version, licence and reason", checkDeps},
	{"licences", "every module linked into what we ship (go list -deps -test=false ./... tool) has an allowlisted licence, read from its text", checkLicences},
	{"stray", "no file that a misplaced process writes (Podman's oom marker) is in the repository", checkStray},
	{"nix", "every tracked .nix file parses (nix-instantiate --parse), and nix/plan.nix maps the plan as the Go plan is", checkNix},
	{"runbook", "every runbook anchor named in Go source has a five-part entry in docs/runbook.md", checkRunbook},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", ".", "the repository root")
	fuzzTime := fs.Duration("fuzztime", 4*time.Second, "how long the fuzz command runs each target")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./internal/gate [-C dir] check... | all | fuzz [-fuzztime d]\n\nchecks:\n")
		for _, c := range checks {
			fmt.Fprintf(stderr, "  %-9s %s\n", c.name, c.about)
		}
		fmt.Fprintf(stderr, "  %-9s %s\n", "fuzz", "discover every Fuzz target and run each for -fuzztime, one at a time")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	names := fs.Args()
	if len(names) == 1 && names[0] == "fuzz" {
		if err := fuzzAll(*dir, *fuzzTime, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "gate: fuzz: %v\n", err)
			return 1
		}
		return 0
	}
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, c := range checks {
			names = append(names, c.name)
		}
	}
	if len(names) == 0 {
		fs.Usage()
		return 2
	}
	status := 0
	for _, name := range names {
		c, ok := find(name)
		if !ok {
			fmt.Fprintf(stderr, "gate: no check named %q\n", name)
			fs.Usage()
			return 2
		}
		start := time.Now()
		problems, err := c.run(*dir)
		switch {
		case err != nil:
			fmt.Fprintf(stdout, "gate: %s: could not run: %v\n", name, err)
			status = 1
		case len(problems) > 0:
			for _, p := range problems {
				fmt.Fprintf(stdout, "gate: %s: %s\n", name, p)
			}
			fmt.Fprintf(stdout, "gate: %s: FAIL, %d problems\n", name, len(problems))
			status = 1
		default:
			fmt.Fprintf(stdout, "gate: %s: ok (%.1fs)\n", name, time.Since(start).Seconds())
		}
	}
	return status
}

func find(name string) (check, bool) {
	for _, c := range checks {
		if c.name == name {
			return c, true
		}
	}
	return check{}, false
}
