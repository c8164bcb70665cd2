package audit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeLog opens dir, appends n records and closes it.
func writeLog(t *testing.T, dir string, c *clock, n int) {
	t.Helper()
	w, _ := openT(t, dir, c, Options{})
	for range n {
		appendT(t, w, someEvent)
	}
	closeT(t, w)
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCreatesAndContinues(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	writeLog(t, dir, c, 3)
	w, rep := openT(t, dir, c, Options{})
	if rep.NextSeq != 3 || rep.Recovered != nil || rep.Accepted != nil || rep.Lines() != nil {
		t.Fatalf("%+v", rep)
	}
	if seq := appendT(t, w, someEvent); seq != 3 {
		t.Fatalf("seq %d", seq)
	}
	closeT(t, w)
	if rep := verifyOK(t, dir); rep.Records != 4 {
		t.Fatalf("%+v", rep)
	}
}

func TestOpenRecoversTornTail(t *testing.T) {
	for name, torn := range map[string]func(full []byte) []byte{
		"cut":      func(b []byte) []byte { return b[:40] },
		"complete": func(b []byte) []byte { return b }, // everything but the newline
	} {
		for _, nextDay := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/next day"}[nextDay], func(t *testing.T) {
				dir, c := logDir(t), newClock(day0)
				writeLog(t, dir, c, 2)
				path := filepath.Join(dir, f1)
				lines := readLines(t, path)
				f := newForge(t)
				f.after(1, []byte(strings.TrimSuffix(lines[1], "\n")))
				tb := torn(f.next(someEvent))
				appendBytes(t, path, tb)
				if nextDay {
					c.Set(day0.Add(24 * time.Hour))
				}
				w, rep := openT(t, dir, c, Options{})
				if rep.Recovered == nil || *rep.Recovered != (Location{f1, 3}) || rep.NextSeq != 3 {
					t.Fatalf("%+v", rep)
				}
				want := []string{"audit: recovered a torn final line", "see docs/runbook.md#audit-recovered"}
				if !slices.Equal(rep.Lines(), want) {
					t.Fatalf("%q", rep.Lines())
				}
				appendT(t, w, someEvent)
				closeT(t, w)
				b, _ := os.ReadFile(path)
				if !strings.Contains(string(b), string(tb)+"\n") {
					t.Fatal("the torn bytes were not kept")
				}
				vrep := verifyOK(t, dir)
				if !slices.Equal(vrep.Recoveries, []Location{{f1, 3}}) || vrep.Records != 4 {
					t.Fatalf("%+v", vrep)
				}
				// And the next start is clean.
				w, rep = openT(t, dir, c, Options{})
				closeT(t, w)
				if rep.Recovered != nil || rep.FullCheck {
					t.Fatalf("%+v", rep)
				}
			})
		}
	}
}

func TestOpenRefusesBrokenChain(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	writeLog(t, dir, c, 4)
	path := filepath.Join(dir, f1)
	lines := readLines(t, path)
	lines[1], lines[2] = lines[2], lines[1]
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(dir, Options{Now: c.Now})
	var be *BrokenError
	if !errors.Is(err, ErrChainBroken) || !errors.As(err, &be) || be.Failure.Location != (Location{f1, 2}) {
		t.Fatalf("%v", err)
	}
	want := "audit: the chain is broken at " + f1 + ":2: seq is 2, expected 1\nsee docs/runbook.md#audit-chain-broken"
	if err.Error() != want {
		t.Fatalf("%q", err)
	}
	// Refusing wrote nothing, and released the lock.
	if got := readLines(t, path); !slices.Equal(got, lines) {
		t.Fatal("the log changed")
	}
	// Accepting the break writes an AcceptedBreak record and starts.
	w, rep := openT(t, dir, c, Options{AcceptBreak: true})
	if rep.Accepted == nil || rep.Accepted.Location != (Location{f1, 2}) {
		t.Fatalf("%+v", rep)
	}
	if want := []string{"audit: accepted the break at " + f1 + ":2: seq is 2, expected 1"}; !slices.Equal(rep.Lines(), want) {
		t.Fatalf("%q", rep.Lines())
	}
	// Lines 2 and 3 carry seq 2 and 1, line 4 seq 3: the break takes 4.
	if seq := appendT(t, w, someEvent); seq != 5 {
		t.Fatalf("seq %d after the break", seq)
	}
	closeT(t, w)
	vrep := verifyOK(t, dir)
	if !slices.Equal(vrep.AcceptedBreaks, []Location{{f1, 2}}) {
		t.Fatalf("%+v", vrep)
	}
	// A later start is clean; asking to accept again is an error.
	w, _ = openT(t, dir, c, Options{})
	closeT(t, w)
	_, _, err = Open(dir, Options{Now: c.Now, AcceptBreak: true})
	if !errors.Is(err, ErrNothingToAccept) || !strings.Contains(err.Error(), "nothing to accept") ||
		!strings.HasSuffix(err.Error(), "\nsee docs/runbook.md#audit-accept-break-nothing") {
		t.Fatalf("%v", err)
	}
}

// TestOpenChecksOnlyTheNewestFile follows M3a §5: startup resumes from the
// file before the newest and does not re-read older files; bxctl audit
// verify does. Accepting a break reads everything, to find the same failure
// bxctl reports.
func TestOpenChecksOnlyTheNewestFile(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	writeLog(t, dir, c, 4)
	c.Set(day0.Add(24 * time.Hour))
	writeLog(t, dir, c, 4)
	path := filepath.Join(dir, f1)
	lines := readLines(t, path)
	lines[1] = strings.Replace(lines[1], `"torn_bytes":1`, `"torn_bytes":2`, 1)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	w, rep := openT(t, dir, c, Options{})
	closeT(t, w)
	if rep.FullCheck {
		t.Fatalf("%+v", rep)
	}
	vrep, _ := VerifyDir(dir)
	failureAt(t, vrep, f1, 3, "prev is not the hash of line 2")
	w, rep = openT(t, dir, c, Options{AcceptBreak: true})
	closeT(t, w)
	if rep.Accepted == nil || rep.Accepted.Location != (Location{f1, 3}) {
		t.Fatalf("%+v", rep)
	}
	vrep = verifyOK(t, dir)
	if !slices.Equal(vrep.AcceptedBreaks, []Location{{f1, 3}}) {
		t.Fatalf("%+v", vrep)
	}
	// The break record ends the newest file; starting again is clean (after a
	// full check, as the newest file alone cannot show the break is right).
	w, _ = openT(t, dir, c, Options{})
	closeT(t, w)
}

// TestOpenAfterEmptyNewestFile: a crash after creating a day's file and
// before writing to it leaves it empty; startup resumes from the file
// before.
func TestOpenAfterEmptyNewestFile(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	writeLog(t, dir, c, 3)
	if err := os.WriteFile(filepath.Join(dir, f2), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.Set(day0.Add(48 * time.Hour))
	w, rep := openT(t, dir, c, Options{})
	if rep.FullCheck || rep.NextSeq != 3 {
		t.Fatalf("%+v", rep)
	}
	appendT(t, w, someEvent)
	closeT(t, w)
	if rep := verifyOK(t, dir); rep.Records != 4 {
		t.Fatalf("%+v", rep)
	}
}

// TestOpenResumesFromRecoveredLine: the newest file opens with the Recovery
// record for the torn last line of the file before.
func TestOpenResumesFromRecoveredLine(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	writeLog(t, dir, c, 3)
	appendBytes(t, filepath.Join(dir, f1), []byte(`{"seq":3,"ti`))
	c.Set(day0.Add(24 * time.Hour))
	w, rep := openT(t, dir, c, Options{}) // the Recovery record goes to the new day's file
	closeT(t, w)
	if rep.Recovered == nil || rep.FullCheck {
		t.Fatalf("%+v", rep)
	}
	w, rep = openT(t, dir, c, Options{})
	appendT(t, w, someEvent)
	closeT(t, w)
	if rep.FullCheck || rep.NextSeq != 4 {
		t.Fatalf("%+v", rep)
	}
	vrep := verifyOK(t, dir)
	if !slices.Equal(vrep.Recoveries, []Location{{f1, 4}}) || vrep.Records != 5 {
		t.Fatalf("%+v", vrep)
	}
}

func TestOpenBreakAfterTornTail(t *testing.T) {
	dir, c := logDir(t), newClock(day0)
	writeLog(t, dir, c, 3)
	path := filepath.Join(dir, f1)
	lines := readLines(t, path)
	lines[0] = strings.Replace(lines[0], `"torn_bytes":1`, `"torn_bytes":3`, 1)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")+`{"seq":3`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(dir, Options{Now: c.Now}); !errors.Is(err, ErrChainBroken) {
		t.Fatalf("%v", err)
	}
	w, rep := openT(t, dir, c, Options{AcceptBreak: true})
	closeT(t, w)
	if rep.Accepted == nil || rep.Accepted.Location != (Location{f1, 2}) {
		t.Fatalf("%+v", rep)
	}
	verifyOK(t, dir)
}
