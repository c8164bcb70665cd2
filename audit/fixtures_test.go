package audit

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite fixtures/audit from the generators in fixgen_test.go")

// fixRoot holds one directory per case: audit/*.jsonl, the log, and
// expect.txt, what `bxctl audit verify` prints for it.
const fixRoot = "../fixtures/audit"

// TestFixtures is the tampering suite (M3a §12): each case's log is made
// afresh and must equal the committed one byte for byte; the committed log
// must verify as expect.txt says, fail (or not) where the case says, and
// startup on a copy of it must find the same failure.
func TestFixtures(t *testing.T) {
	for _, c := range fixCases {
		t.Run(c.name, func(t *testing.T) {
			gen := filepath.Join(t.TempDir(), "audit")
			c.make(t, gen)
			dir := filepath.Join(fixRoot, c.name)
			if *update {
				writeFixture(t, gen, dir)
			}
			compareLogs(t, gen, filepath.Join(dir, "audit"))
			rep, err := VerifyDir(filepath.Join(dir, "audit"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "expect.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if got := formatted(t, rep); got != string(want) {
				t.Fatalf("verify prints\n%s\nexpect.txt says\n%s", got, want)
			}
			checkStartup(t, c, rep, filepath.Join(dir, "audit"))
		})
	}
}

// checkStartup runs Open on a copy of the case's log.
func checkStartup(t *testing.T, c fixCase, rep ChainReport, log string) {
	t.Helper()
	copyDir := filepath.Join(t.TempDir(), "audit")
	copyLog(t, log, copyDir)
	w, srep, err := Open(copyDir, Options{Now: newClock(fixDays[2].Add(2 * time.Hour)).Now})
	if c.fail != "" {
		var be *BrokenError
		if rep.Failure == nil || rep.Failure.Location.String() != c.fail {
			t.Fatalf("VerifyDir: failure %v, want at %s", rep.Failure, c.fail)
		}
		if !errors.As(err, &be) || be.Failure.Location.String() != c.fail {
			t.Fatalf("Open: %v, want the chain broken at %s", err, c.fail)
		}
		return
	}
	if rep.Failure != nil {
		t.Fatalf("VerifyDir: %v", rep.Failure)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	closeT(t, w)
	if !reflect.DeepEqual(srep.Recovered, rep.TornTail) {
		t.Fatalf("Open recovered %v; the torn tail is %v", srep.Recovered, rep.TornTail)
	}
	verifyOK(t, copyDir)
}

// logNamesT lists a log's files.
func logNamesT(t testing.TB, dir string) []string {
	t.Helper()
	names, err := logNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func compareLogs(t *testing.T, gen, committed string) {
	t.Helper()
	g, c := logNamesT(t, gen), logNamesT(t, committed)
	if !slices.Equal(g, c) {
		t.Fatalf("files %v, committed %v (go test ./audit -run TestFixtures -update rewrites them)", g, c)
	}
	for _, name := range g {
		a, _ := os.ReadFile(filepath.Join(gen, name))
		b, _ := os.ReadFile(filepath.Join(committed, name))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs from the committed fixture (go test ./audit -run TestFixtures -update rewrites it)", name)
		}
	}
}

// writeFixture replaces the case directory with gen's log and its report.
func writeFixture(t *testing.T, gen, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	copyLog(t, gen, filepath.Join(dir, "audit"))
	rep, err := VerifyDir(gen)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "expect.txt"), []byte(formatted(t, rep)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyLog copies a log's files (not its lock) into a new directory.
func copyLog(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range logNamesT(t, from) {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
