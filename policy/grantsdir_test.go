package policy_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/policy"
	"boxmaker/wire"
)

// TestGrantsDirSeesEveryEdit: one GrantsDir across edits that keep the
// file's size and modification time: the bytes decide, never metadata, and
// a version seen before is not confused with the current one.
func TestGrantsDirSeesEveryEdit(t *testing.T) {
	allow := simple("read_file", `paths = ["/n"]`)
	deny := strings.Replace(allow, `"auto"`, `"deny"`, 1) // same size
	dir := grantsDir(t, nil)
	path := filepath.Join(dir, "g.toml")
	g := policy.NewGrantsDir(dir, nil)
	req := request("read_file", `{"path":"/n/a"}`)
	stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	for i, step := range []struct {
		do   func()
		want string
	}{
		{func() {}, "no_grant"},
		{func() { write(allow) }, "allowed"},
		{func() { write(deny) }, "denied_by_grant"},
		{func() { write(allow) }, "allowed"},
		{func() { write(strings.Replace(allow, "auto", "aut0", 1)) }, "grants_invalid"},
		{func() { write(allow) }, "allowed"},
		{func() { os.Remove(path) }, "no_grant"},
		{func() { write(deny) }, "denied_by_grant"},
	} {
		step.do()
		if got := outcomeName(g.Decide(req, private, now)); got != step.want {
			t.Errorf("step %d: got %s, want %s", i, got, step.want)
		}
	}
}

// TestGrantsDirMatchesFreshReads is a property test against the naive
// oracle, a fresh LoadGrants at every step: random edits, removals and
// invalid files, and after each one GrantsDir decides every request as the
// oracle does, with the same grant and the same problems.
func TestGrantsDirMatchesFreshReads(t *testing.T) {
	dir := grantsDir(t, nil)
	g := policy.NewGrantsDir(dir, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{
		simple("read_file", `paths = ["/n"]`),
		strings.Replace(simple("read_file", `paths = ["/n"]`), `"auto"`, `"deny"`, 1),
		strings.Replace(simple("read_file", `paths = ["/n/a"]`), `"auto"`, `"ask"`, 1),
		simple("read_file", `paths = ["/m"]`),
		simple("http_fetch", `hosts = ["example.com"]`),
		"tool = \"read_file\"\n",
		"not toml",
	}
	names := []string{"a.toml", "b.toml", "c.toml", "Bad.toml", "d.txt"}
	reqs := []wire.ToolRequest{
		request("read_file", `{"path":"/n/a"}`),
		request("read_file", `{"path":"/m/x"}`),
		request("http_fetch", `{"url":"https://example.com/"}`),
	}
	for step := range 300 {
		name := filepath.Join(dir, names[rng.IntN(len(names))])
		if rng.IntN(4) == 0 {
			os.Remove(name)
		} else if err := os.WriteFile(name, []byte(texts[rng.IntN(len(texts))]), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, req := range reqs {
			got, want := g.Decide(req, private, now), policy.Decide(dir, req, private, now)
			if a, b := describeDecision(got), describeDecision(want); a != b {
				t.Fatalf("step %d, %s: got %s, want %s", step, req.Arguments, a, b)
			}
		}
	}
}

func describeDecision(d policy.Decision) string {
	info, _ := d.Grant()
	var ps []string
	for _, p := range d.Problems() {
		ps = append(ps, policy.FormatProblem(p))
	}
	exp := ""
	if info.Expires != nil {
		exp = info.Expires.String()
	}
	info.Expires = nil
	return fmt.Sprintf("%s %+v %s %q", outcomeName(d), info, exp, ps)
}

// TestGrantsDirSharesReads: calls that arrive while a read is under way
// share the next read, which starts after they came: they see an edit made
// during the earlier read, and the earlier call does not.
func TestGrantsDirSharesReads(t *testing.T) {
	allow := simple("read_file", `paths = ["/n"]`)
	dir := grantsDir(t, map[string]string{"g.toml": allow})
	g := policy.NewGrantsDir(dir, nil)
	req := request("read_file", `{"path":"/n/a"}`)

	var reads atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	policy.HoldReads(t, func() {
		if reads.Add(1) == 1 {
			close(held)
			<-release
		}
	})
	first := make(chan string)
	go func() { first <- outcomeName(g.Decide(req, private, now)) }()
	<-held // the first read has its bytes
	deny := strings.Replace(allow, `"auto"`, `"deny"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "g.toml"), []byte(deny), 0o600); err != nil {
		t.Fatal(err)
	}
	const later = 8
	var wg sync.WaitGroup
	results := make([]string, later)
	for i := range later {
		wg.Go(func() { results[i] = outcomeName(g.Decide(req, private, now)) })
	}
	// Let every later call reach Load before the first read ends; the
	// count of reads below shows whether they shared one.
	time.Sleep(50 * time.Millisecond)
	close(release)
	if got := <-first; got != "allowed" {
		t.Errorf("the first call: %s", got)
	}
	wg.Wait()
	if slices.ContainsFunc(results, func(s string) bool { return s != "denied_by_grant" }) {
		t.Errorf("the later calls: %v", results)
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("%d reads for 1 + %d calls, want 2", n, later)
	}
}

// TestGrantsDirForgetsRemovedFiles: what a GrantsDir keeps between reads is
// the files of the last read, so it cannot grow with files long gone.
func TestGrantsDirForgetsRemovedFiles(t *testing.T) {
	text := simple("read_file", `paths = ["/n"]`)
	dir := grantsDir(t, map[string]string{"a.toml": text, "b.toml": text, "c.toml": text, "x.txt": text})
	g := policy.NewGrantsDir(dir, nil)
	g.Load()
	if got := g.Remembered(); !slices.Equal(got, []string{"a.toml", "b.toml", "c.toml"}) {
		t.Fatalf("after the first read: %v", got)
	}
	os.Remove(filepath.Join(dir, "a.toml"))
	os.Remove(filepath.Join(dir, "c.toml"))
	os.WriteFile(filepath.Join(dir, "d.toml"), []byte(text), 0o600)
	g.Load()
	if got := g.Remembered(); !slices.Equal(got, []string{"b.toml", "d.toml"}) {
		t.Errorf("after removals: %v", got)
	}
}
