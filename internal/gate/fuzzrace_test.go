package main

import "testing"

// TestCoordinatorRace: only the coordinator's bare deadline error is run
// again; a failing input, or a panic, is a failure.
func TestCoordinatorRace(t *testing.T) {
	race := "fuzz: elapsed: 4s, execs: 97704 (30794/sec)\n--- FAIL: FuzzParseArgs (4.14s)\n    context deadline exceeded\nFAIL\n"
	for out, want := range map[string]bool{
		race: true,
		race + "    Failing input written to testdata/fuzz/FuzzParseArgs/abc\n": false,
		"--- FAIL: FuzzX (1.00s)\n    fuzz_test.go:9: wrong\n":                  false,
		"panic: boom\n    context deadline exceeded\n":                          false,
		"ok\n": false,
	} {
		if got := coordinatorRace(out); got != want {
			t.Errorf("coordinatorRace(%q) = %v, want %v", out, got, want)
		}
	}
}
