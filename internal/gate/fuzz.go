package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// A fuzz target: go test -fuzz runs one target of one package at a time.
type target struct{ pkg, name string }

// fuzzAll finds every Fuzz function of every package and fuzzes each for d,
// one after another, so that a new target is fuzzed without anyone listing
// it. It runs them all and then reports every one that failed.
func fuzzAll(dir string, d time.Duration, stdout, stderr io.Writer) error {
	targets, err := fuzzTargets(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fuzz: %d targets, %s each\n", len(targets), d)
	var failed []string
	for _, t := range targets {
		fmt.Fprintf(stdout, "fuzz: %s %s\n", t.pkg, t.name)
		out, err := fuzzOnce(dir, t, d, stdout, stderr)
		if err != nil && coordinatorRace(out) {
			// Go 1.26's fuzz coordinator can report the end of -fuzztime
			// itself as a failure (golang/go#75804, fixed in Go 1.27):
			// no input failed and none was written. Run the target again,
			// once; a second failure counts.
			fmt.Fprintf(stdout, "fuzz: %s %s: the coordinator's deadline race (golang/go#75804), no failing input; running it again\n", t.pkg, t.name)
			_, err = fuzzOnce(dir, t, d, stdout, stderr)
		}
		if err != nil {
			failed = append(failed, t.pkg+" "+t.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d targets failed: %s", len(failed), len(targets), strings.Join(failed, ", "))
	}
	return nil
}

// fuzzOnce runs one target for d, showing its output and keeping a copy.
func fuzzOnce(dir string, t target, d time.Duration, stdout, stderr io.Writer) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("go", "test", "-run=^$", "-fuzz=^"+t.name+"$", "-fuzztime="+d.String(), t.pkg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout, &out), io.MultiWriter(stderr, &out)
	err := cmd.Run()
	return out.String(), err
}

// coordinatorRace reports whether a failed run's output is only the fuzz
// coordinator's own deadline error, with no failing input found.
func coordinatorRace(out string) bool {
	return strings.Contains(out, "\n    context deadline exceeded\n") && !strings.Contains(out, "Failing input written") &&
		!strings.Contains(out, "panic:")
}

func fuzzTargets(dir string) ([]target, error) {
	out, err := goCmd(dir, "test", "-list", "^Fuzz", "./...")
	if err != nil {
		return nil, err
	}
	return parseTestList(string(out))
}

// parseTestList reads go test -list output: each package's names, then a
// line "ok <package> <time>" (or "? <package> [no test files]").
func parseTestList(out string) ([]target, error) {
	var targets []target
	var pending []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "ok" && len(f) >= 2:
			for _, name := range pending {
				targets = append(targets, target{f[1], name})
			}
			pending = nil
		case f[0] == "?":
		case len(f) == 1 && strings.HasPrefix(f[0], "Fuzz"):
			pending = append(pending, f[0])
		default:
			return nil, fmt.Errorf("unexpected line in go test -list output: %q", line)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("go test -list named %s without its package", strings.Join(pending, ", "))
	}
	return targets, nil
}
