package audit

import (
	"bufio"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"boxmaker/wire"
)

// TestCrash kills a writer with SIGKILL at random moments, many times: after
// each kill, startup must recover (Open succeeds, writing a Recovery record
// if a line was torn), the whole log must verify, and every record the
// writer reported as written must be in it. The child splits each write in
// two with a pause between, so that kills also land mid-line, as a power
// cut would. AUDIT_CRASH_ROUNDS sets the number of kills (default 200).
func TestCrash(t *testing.T) {
	rounds := 200
	if s := os.Getenv("AUDIT_CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("AUDIT_CRASH_ROUNDS: %v", err)
		}
		rounds = n
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	var dir string
	var reported map[uint64]uint64 // seq -> call, as the children said
	recoveries, found := 0, 0
	for round := range rounds {
		// A fresh log now and then keeps each round's verification short.
		if round%10 == 0 {
			dir, reported = filepath.Join(t.TempDir(), "audit"), map[uint64]uint64{}
		}
		for seq, call := range crashChild(t, dir, uint64(round)<<32, time.Duration(rng.IntN(20_001))*time.Microsecond) {
			reported[seq] = call
		}
		w, rep, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: startup after the kill: %v", round, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if rep.Recovered != nil {
			recoveries++
		}
		verifyOK(t, dir)
		checkReported(t, dir, reported)
		found += len(reported)
	}
	t.Logf("%d kills, %d torn lines recovered, %d checks that a reported record is there", rounds, recoveries, found)
}

// crashChild runs a writer in another process, kills it after it has
// appended for about d, and returns what it reported as written.
func crashChild(t *testing.T, dir string, base uint64, d time.Duration) map[uint64]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), "AUDIT_CRASH_CHILD="+dir, fmt.Sprintf("AUDIT_CRASH_BASE=%d", base))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return // a line cut by the kill was never reported
			}
			lines <- l
		}
	}()
	if l := <-lines; l != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child: %q", l)
	}
	time.Sleep(d)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]uint64{}
	for l := range lines {
		var seq, call uint64
		if _, err := fmt.Sscanf(l, "%d %d\n", &seq, &call); err != nil {
			t.Fatalf("child said %q", l)
		}
		got[seq] = call
	}
	_ = cmd.Wait() // killed: its error says so
	return got
}

// checkReported checks that each reported record is in the log, as written.
func checkReported(t *testing.T, dir string, reported map[uint64]uint64) {
	t.Helper()
	found := map[uint64][]uint64{} // seq -> calls of the decisions with it
	var d parser
	for _, name := range logNamesT(t, dir) {
		for _, l := range readLines(t, filepath.Join(dir, name)) {
			var r lineRec
			if d.parseFast([]byte(strings.TrimSuffix(l, "\n")), &r) && r.kind == evDecision {
				found[r.seq] = append(found[r.seq], r.call)
			}
		}
	}
	for seq, call := range reported {
		if !containsU(found[seq], call) {
			t.Fatalf("record %d (call %d) was reported written but is not in the log", seq, call)
		}
	}
}

func containsU(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestCrashChild is the writer TestCrash kills: it appends from four
// goroutines as fast as it can and prints "seq call" once each Append has
// returned.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("AUDIT_CRASH_CHILD")
	if dir == "" {
		t.Skip("only run by TestCrash")
	}
	base, _ := strconv.ParseUint(os.Getenv("AUDIT_CRASH_BASE"), 10, 64)
	w, _, err := Open(dir, Options{OpenFile: splitOpen})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := os.Stdout.WriteString(s); err != nil {
			os.Exit(1)
		}
	}
	say("ready\n")
	for g := range uint64(4) {
		go func() {
			for call := base + g<<24; ; call++ {
				seq, err := w.Append(decision("crash", call, wire.OutcomeAllowed{}))
				if err != nil {
					say(fmt.Sprintf("error %v\n", err))
					return
				}
				say(fmt.Sprintf("%d %d\n", seq, call))
			}
		}()
	}
	select {} // until killed
}

// splitOpen opens files whose writes go to disk in two parts.
func splitOpen(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return splitFile{f}, nil
}

type splitFile struct{ *os.File }

func (f splitFile) Write(b []byte) (int, error) {
	cut := rand.IntN(len(b) + 1)
	n, err := f.File.Write(b[:cut])
	if err != nil {
		return n, err
	}
	time.Sleep(50 * time.Microsecond) // a window for the kill
	m, err := f.File.Write(b[cut:])
	return n + m, err
}
