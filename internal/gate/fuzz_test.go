package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTestList(t *testing.T) {
	out := "FuzzUnmarshal\nFuzzFrame\nok  \tboxmaker/wire\t0.011s\n" +
		"?   \tboxmaker/roles/loopd\t[no test files]\n" +
		"ok  \tboxmaker/policy\t0.004s\n" +
		"FuzzArgs\nok  \tboxmaker/policy/args\t(cached)\n"
	got, err := parseTestList(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []target{{"boxmaker/wire", "FuzzUnmarshal"}, {"boxmaker/wire", "FuzzFrame"}, {"boxmaker/policy/args", "FuzzArgs"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"FuzzA\n", "FAIL\tboxmaker/wire [build failed]\n", "FuzzA FuzzB\nok x 0s\n"} {
		if _, err := parseTestList(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestFuzzAllFindsAndRunsEveryTarget discovers targets in two packages of a
// planted module, with no list to keep, and reports the one that fails.
func TestFuzzAllFindsAndRunsEveryTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and fuzzes a planted module")
	}
	offline(t)
	dir := writeTree(t, map[string]string{
		"go.mod": "module example\n\ngo 1.26\n",
		"a/a.go": "package a\n",
		"a/a_test.go": `package a

import "testing"

func FuzzFine(f *testing.F) {
	f.Add("seed")
	f.Fuzz(func(t *testing.T, s string) {})
}

func TestNotFuzz(t *testing.T) {}
`,
		"b/b.go": "package b\n",
		"b/b_test.go": `package b

import "testing"

func FuzzBroken(f *testing.F) {
	f.Add(1)
	f.Fuzz(func(t *testing.T, n int) { t.Fatal("planted failure") })
}
`,
		"c/c.go": "package c\n",
	})
	targets, err := fuzzTargets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []target{{"example/a", "FuzzFine"}, {"example/b", "FuzzBroken"}}; !slices.Equal(targets, want) {
		t.Fatalf("found %v, want %v", targets, want)
	}
	var out bytes.Buffer
	err = fuzzAll(dir, time.Second, &out, &out)
	if err == nil || err.Error() != "1 of 2 targets failed: example/b FuzzBroken" {
		t.Errorf("fuzzAll: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "fuzz: example/a FuzzFine") {
		t.Errorf("FuzzFine did not run:\n%s", out.String())
	}
}
