package policy_test

import (
	"reflect"
	"testing"

	"boxmaker/policy"
)

// TestCoverageTable is every row of M3a §3's "What each tool takes, and what
// its constraints cover", each way round, with the paths or hosts the runner
// is given (M3a §7's mounts and egress).
func TestCoverageTable(t *testing.T) {
	for _, tc := range []struct {
		name, tool, constraints, args, want string
		paths, hosts                        []string
	}{
		{"read inside", "read_file", `paths = ["/n", "/m"]`, `{"path":"/m/a"}`, "allowed", []string{"/m"}, nil},
		{"read outside", "read_file", `paths = ["/n", "/m"]`, `{"path":"/o/a"}`, "no_grant", nil, nil},
		{"write inside", "write_file", `paths = ["/n"]`, `{"path":"/n/a","content":"x"}`, "allowed", []string{"/n"}, nil},
		{"write the grant path itself", "write_file", `paths = ["/n"]`, `{"path":"/n","content":"x"}`, "no_grant", nil, nil},
		{"write a grant path inside another", "write_file", `paths = ["/n", "/n/a"]`, `{"path":"/n/a","content":"x"}`, "allowed", []string{"/n"}, nil},
		{"write outside", "write_file", `paths = ["/n"]`, `{"path":"/m/a","content":"x"}`, "no_grant", nil, nil},
		{"shell no paths, no cwd", "shell", ``, `{"command":"ls"}`, "allowed", nil, nil},
		{"shell no paths, cwd", "shell", ``, `{"command":"ls","cwd":"/n"}`, "no_grant", nil, nil},
		{"shell paths, no cwd", "shell", `paths = ["/n"]`, `{"command":"ls"}`, "no_grant", nil, nil},
		{"shell paths, cwd inside", "shell", `paths = ["/n", "/m"]`, `{"command":"ls","cwd":"/m/x"}`, "allowed", []string{"/n", "/m"}, nil},
		{"shell paths, cwd is a grant path", "shell", `paths = ["/n"]`, `{"command":"ls","cwd":"/n"}`, "allowed", []string{"/n"}, nil},
		{"shell paths, cwd outside", "shell", `paths = ["/n"]`, `{"command":"ls","cwd":"/m"}`, "no_grant", nil, nil},
		{"fetch host matches", "http_fetch", `hosts = ["a.org", "*.example.com"]`, `{"url":"https://x.example.com/p"}`, "allowed", nil, []string{"a.org", "*.example.com"}},
		{"fetch host does not match", "http_fetch", `hosts = ["a.org"]`, `{"url":"https://b.org/"}`, "no_grant", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := grantsDir(t, map[string]string{"g.toml": simple(tc.tool, tc.constraints)})
			d := policy.Decide(dir, request(tc.tool, tc.args), private, now)
			if got := outcomeName(d); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if tc.want != "allowed" {
				return
			}
			a, err := d.Claim()
			if err != nil {
				t.Fatal(err)
			}
			if a.Tool().String() != tc.tool || a.GrantID() != "g" {
				t.Errorf("allowed %s under %q", a.Tool(), a.GrantID())
			}
			if !reflect.DeepEqual(a.Paths(), tc.paths) || !reflect.DeepEqual(a.Hosts(), tc.hosts) {
				t.Errorf("paths %q hosts %q, want %q %q", a.Paths(), a.Hosts(), tc.paths, tc.hosts)
			}
		})
	}
}

// TestGrantForOtherToolIsNoCandidate: a grant for read_file says nothing
// about write_file on the same path.
func TestGrantForOtherToolIsNoCandidate(t *testing.T) {
	dir := grantsDir(t, map[string]string{"g.toml": simple("read_file", `paths = ["/a"]`)})
	d := policy.Decide(dir, request("write_file", `{"path":"/a","content":""}`), private, now)
	if got := outcomeName(d); got != "no_grant" {
		t.Errorf("got %s", got)
	}
}

// TestUnknownTool: no grant can name a tool outside the four (such a file
// makes the set invalid), so a request for one is no_grant, whatever its
// arguments.
func TestUnknownTool(t *testing.T) {
	dir := grantsDir(t, map[string]string{"g.toml": simple("read_file", `paths = ["/a"]`)})
	for _, tool := range []string{"exec", "Read_file", "", "clock"} {
		d := policy.Decide(dir, request(tool, `not json`), private, now)
		if got := outcomeName(d); got != "no_grant" {
			t.Errorf("%q: got %s", tool, got)
		}
	}
}
