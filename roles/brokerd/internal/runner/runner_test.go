package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/roles/brokerd/internal/runner/runnertest"
	"boxmaker/wire"
)

func grants(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func decide(t *testing.T, dir, tool, args string) policy.Decision {
	t.Helper()
	sid, _ := wire.NewSessionID("s-1")
	return policy.Decide(dir, wire.ToolRequest{Session: sid, Call: 1, Tool: tool, Arguments: args},
		policy.State{Taint: wire.Private}, wire.Now())
}

const auto = "mode = \"auto\"\nmax_taint = \"secret\"\n"

// TestMountsAndEgress is M3a §7's table, one row per tool.
func TestMountsAndEgress(t *testing.T) {
	dir := grants(t, map[string]string{
		"read.toml":  "tool = \"read_file\"\n" + auto + "[constraints]\npaths = [\"/home/kyle\", \"/home/kyle/notes\"]\n",
		"write.toml": "tool = \"write_file\"\n" + auto + "[constraints]\npaths = [\"/home/kyle/out\"]\n",
		"shell.toml": "tool = \"shell\"\n" + auto + "[constraints]\npaths = [\"/home/kyle/scratch\", \"/srv/data\"]\n",
		"fetch.toml": "tool = \"http_fetch\"\n" + auto + "[constraints]\nhosts = [\"example.com\", \"*.example.org\"]\n",
	})
	for _, tc := range []struct {
		tool, args string
		mounts     []runner.Mount
		egress     []string
	}{
		{"read_file", `{"path":"/home/kyle/notes/a.md"}`, []runner.Mount{{Path: "/home/kyle/notes"}}, nil},
		{"write_file", `{"path":"/home/kyle/out/a.md","content":"x"}`, []runner.Mount{{Path: "/home/kyle/out", Writable: true}}, nil},
		{"shell", `{"command":"ls","cwd":"/srv/data"}`, []runner.Mount{{Path: "/home/kyle/scratch", Writable: true}, {Path: "/srv/data", Writable: true}}, nil},
		{"http_fetch", `{"url":"https://www.example.org/x"}`, nil, []string{"example.com", "*.example.org"}},
	} {
		rt := &runnertest.Recording{Output: runner.Output{Content: "ok"}}
		res, err := runner.Run(context.Background(), decide(t, dir, tc.tool, tc.args), rt)
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if _, ok := res.Response.(wire.ResultResponse); !ok {
			t.Fatalf("%s: response %#v", tc.tool, res.Response)
		}
		specs := rt.Specs()
		if len(specs) != 1 {
			t.Fatalf("%s: %d runs", tc.tool, len(specs))
		}
		if got := specs[0].Mounts(); !reflect.DeepEqual(got, tc.mounts) {
			t.Errorf("%s: mounts %v, want %v", tc.tool, got, tc.mounts)
		}
		hosts, ok := specs[0].Egress()
		if ok != (tc.egress != nil) || !reflect.DeepEqual(hosts, tc.egress) {
			t.Errorf("%s: egress %v (%v), want %v", tc.tool, hosts, ok, tc.egress)
		}
		if specs[0].Tool().String() != tc.tool {
			t.Errorf("%s: spec tool %v", tc.tool, specs[0].Tool())
		}
	}
}

// TestOnlyAllowedCallsRun: denials, ask without approval, the zero Decision
// and a second run of the same decision never reach the runtime.
func TestOnlyAllowedCallsRun(t *testing.T) {
	dir := grants(t, map[string]string{
		"read.toml": "tool = \"read_file\"\n" + auto + "[constraints]\npaths = [\"/a\"]\n",
		"ask.toml":  "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\n",
	})
	rt := &runnertest.Recording{}
	for name, d := range map[string]policy.Decision{
		"zero":     {},
		"no grant": decide(t, dir, "http_fetch", `{"url":"https://example.com/"}`),
		"invalid":  decide(t, dir, "read_file", `{"path":"/a/../b"}`),
		"ask":      decide(t, dir, "shell", `{"command":"ls"}`),
	} {
		if _, err := runner.Run(context.Background(), d, rt); !errors.Is(err, runner.ErrNotAllowed) {
			t.Errorf("%s: err %v, want ErrNotAllowed", name, err)
		}
	}
	d := decide(t, dir, "read_file", `{"path":"/a/b"}`)
	copied := d
	if _, err := runner.Run(context.Background(), d, rt); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(context.Background(), copied, rt); !errors.Is(err, runner.ErrNotAllowed) {
		t.Errorf("a copy of a used decision ran again: %v", err)
	}
	if rt.Count() != 1 {
		t.Fatalf("the runtime saw %d runs, want 1", rt.Count())
	}
	// The zero RunSpec, the only one other packages can write, is refused.
	if _, err := rt.Run(context.Background(), &runner.RunSpec{}); err == nil {
		t.Fatal("the recording runtime accepted a zero RunSpec")
	}
}

func TestFailuresBecomeFailed(t *testing.T) {
	dir := grants(t, map[string]string{"read.toml": "tool = \"read_file\"\n" + auto + "[constraints]\npaths = [\"/a\"]\n"})
	res, err := runner.Run(context.Background(), decide(t, dir, "read_file", `{"path":"/a/b"}`), runner.Refusing{})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.Response.(wire.FailedResponse); !ok || f.Message != "the runner arrives in M3b" || res.Status != wire.StatusFailed {
		t.Fatalf("Refusing gave %#v", res)
	}
	if res.Class != wire.Private || !res.Untrusted || res.Grant != "read" {
		t.Fatalf("grant details %#v", res)
	}
}

// TestNestedMountsDropped: a shell grant whose paths nest (/srv/d and
// /srv/d/s/x) gets only the outer one. The runtime would resolve the inner
// mount's destination through the outer, a live writable bind, so a
// concurrent call swapping /srv/d/s for a symlink could mount a host
// folder outside every grant (issue 12, item 1's nested variant).
func TestNestedMountsDropped(t *testing.T) {
	dir := grants(t, map[string]string{
		"shell.toml": "tool = \"shell\"\n" + auto + "[constraints]\npaths = [\"/srv/d/s/x\", \"/srv/d\", \"/srv/dd\", \"/srv/d/s\"]\n",
	})
	rt := &runnertest.Recording{Output: runner.Output{Content: "ok"}}
	if _, err := runner.Run(context.Background(), decide(t, dir, "shell", `{"command":"ls","cwd":"/srv/d"}`), rt); err != nil {
		t.Fatal(err)
	}
	got := rt.Specs()[0].Mounts()
	want := []runner.Mount{{Path: "/srv/d", Writable: true}, {Path: "/srv/dd", Writable: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mounts %+v, want %+v", got, want)
	}
}

// TestASecretShellGetsNoWritableMount: a shell call that holds its grant's
// secret as a file may read the grant's paths but write none of them. A
// write there would put the value on the host's disk, outside the secrets
// directory, in a file no taint follows: a read_file of it from another
// session is classed by the read_file grant, and a session that reads it
// while the secret call still runs, before the floor rises, can send it
// anywhere its grants allow.
func TestASecretShellGetsNoWritableMount(t *testing.T) {
	dir := grants(t, map[string]string{
		"shell.toml": "tool = \"shell\"\n" + auto + "result_class = \"secret\"\nsecret = \"deploy_key\"\nsecret_deliver = \"file\"\n" +
			"[constraints]\npaths = [\"/srv/site\", \"/srv/in\"]\n",
	})
	rt := &runnertest.Recording{Output: runner.Output{Content: "ok"}}
	if _, err := runner.Run(context.Background(), decide(t, dir, "shell", `{"command":"cp \"$BOXMAKER_SECRET_FILE\" .","cwd":"/srv/site"}`), rt); err != nil {
		t.Fatal(err)
	}
	spec := rt.Specs()[0]
	if use, ok := spec.Secret(); !ok || !use.File {
		t.Fatalf("the spec carries no file secret: %+v", use)
	}
	want := []runner.Mount{{Path: "/srv/site"}, {Path: "/srv/in"}}
	if got := spec.Mounts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("mounts %+v, want %+v (read-only)", got, want)
	}
}
