package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

const head = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n"

// TestLoadingRules is one case per loading rule (M3a §3, "Loading"), each
// with the text its problem must contain and the line it must name (0: none).
func TestLoadingRules(t *testing.T) {
	for _, tc := range []struct {
		rule    string
		name    string
		content string
		line    uint64
		text    string
	}{
		{"1 not TOML", "g.toml", "tool = \"read_file\nmode", 1, "new lines"},
		{"1 not UTF-8", "g.toml", "tool = \"\xff\"", 0, "not valid UTF-8"},
		{"1 unknown field", "g.toml", head + "colour = \"red\"\n", 4, "colour: unknown field"},
		{"1 unknown field, case variant", "g.toml", "Tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n", 1, "Tool: unknown field"},
		{"1 unknown constraint", "g.toml", head + "[constraints]\npaths = [\"/a\"]\nglobs = [\"*\"]\n", 6, "constraints.globs: unknown field"},
		{"1 missing field", "g.toml", "tool = \"read_file\"\nmode = \"auto\"\n", 0, "max_taint: missing required field"},
		{"1 bad mode", "g.toml", "tool = \"read_file\"\nmode = \"sometimes\"\nmax_taint = \"secret\"\n", 2, "mode"},
		{"1 bad expires", "g.toml", head + "expires = \"2027-01-01\"\n[constraints]\npaths = [\"/a\"]\n", 4, "expires"},
		{"2 bad stem", "Notes.toml", head + "[constraints]\npaths = [\"/a\"]\n", 0, `the file stem "Notes" is not a valid grant id`},
		{"2 empty stem", ".toml", head + "[constraints]\npaths = [\"/a\"]\n", 0, `the file stem "" is not a valid grant id`},
		{"2 stem too long", strings.Repeat("a", 65) + ".toml", head + "[constraints]\npaths = [\"/a\"]\n", 0, "is not a valid grant id"},
		{"3 unknown tool", "g.toml", "tool = \"exec\"\nmode = \"auto\"\nmax_taint = \"secret\"\n", 1, `tool: "exec" is not one of read_file, write_file, shell, http_fetch, remember, recall`},
		{"4 secret on read_file", "g.toml", head + "result_class = \"secret\"\nsecret = \"api-key\"\n[constraints]\npaths = [\"/a\"]\n", 5, "secret: read_file cannot be given a secret; only shell and http_fetch can"},
		{"5 patterns", "g.toml", head + "[constraints]\npaths = [\"/a\"]\npatterns = [\"*.md\"]\n", 6, "patterns are not supported"},
		{"6 missing paths", "g.toml", head, 0, "constraints.paths: read_file requires at least one path"},
		{"6 hosts on read_file", "g.toml", head + "[constraints]\npaths = [\"/a\"]\nhosts = [\"a.com\"]\n", 6, "constraints.hosts: read_file takes no hosts"},
		{"7 relative path", "g.toml", head + "[constraints]\npaths = [\"/a\", \"b\"]\n", 5, `constraints.paths: "b" is not a valid absolute path: it is not absolute`},
		{"7 path on its own line", "g.toml", head + "[constraints]\npaths = [\n  \"/a\",\n  \"/a/../b\",\n]\n", 7, `"/a/../b" is not a valid absolute path: it has a .. component`},
		{"8 bad host", "g.toml", "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\nhosts = [\"Example.com\"]\n", 5, `constraints.hosts: "Example.com" is not a valid host pattern`},
		{"6 paths on remember", "g.toml", simple("remember", "paths = [\"/a\"]\n"), 6, "constraints.paths: remember takes no paths"},
		{"6 hosts on recall", "g.toml", simple("recall", "hosts = [\"a.com\"]\n"), 6, "constraints.hosts: recall takes no hosts"},
		{"5 patterns on recall", "g.toml", simple("recall", "patterns = [\"*\"]\n"), 6, "constraints.patterns: patterns are not supported"},
		{"4 secret on remember", "g.toml", "tool = \"remember\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\nsecret = \"k\"\n", 5,
			"secret: remember cannot be given a secret; only shell and http_fetch can"},
		{"4 secret key on recall", "g.toml", "tool = \"recall\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret_header = \"A\"\n", 4,
			"secret_header: only a grant with a secret takes secret_header"},
		{"job not an id", "g.toml", "tool = \"recall\"\nmode = \"auto\"\nmax_taint = \"secret\"\njob = \"Daily Digest\"\n", 4,
			`job: "Daily Digest" is not a valid job name (1 to 64 characters of [a-z0-9-])`},
		{"job empty", "g.toml", head + "job = \"\"\n[constraints]\npaths = [\"/a\"]\n", 4, `job: "" is not a valid job name`},
		{"job not a string", "g.toml", head + "job = 7\n[constraints]\npaths = [\"/a\"]\n", 4, "job: must be a string"},
		{"8 bad wildcard", "g.toml", "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\nhosts = [\"*.com\"]\n", 5, `"*.com" is not a valid host pattern`},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			dir := grantsDir(t, map[string]string{tc.name: tc.content})
			set, ps, err := policy.LoadGrants(dir, nil)
			if err != nil || set != nil || len(ps) == 0 {
				t.Fatalf("set %v, problems %v, err %v", set, ps, err)
			}
			p := ps[0]
			var line uint64
			if p.Line != nil {
				line = *p.Line
			}
			if p.File != tc.name || line != tc.line || !strings.Contains(p.Problem, tc.text) {
				t.Errorf("got %s; want file %s, line %d, text %q", policy.FormatProblem(p), tc.name, tc.line, tc.text)
			}
		})
	}
}

// TestRule6Table is every cell of loading rule 6's table: which tools take
// paths and hosts.
func TestRule6Table(t *testing.T) {
	type need int
	const (
		optional need = iota
		required
		forbidden
	)
	table := map[string][2]need{
		"read_file":  {required, forbidden},
		"write_file": {required, forbidden},
		"shell":      {optional, forbidden},
		"http_fetch": {forbidden, required},
		"remember":   {forbidden, forbidden},
		"recall":     {forbidden, forbidden},
	}
	ok := func(n need, present bool) bool {
		return n == optional || n == required && present || n == forbidden && !present
	}
	for tool, rule := range table {
		for _, paths := range []bool{false, true} {
			for _, hosts := range []bool{false, true} {
				c := ""
				if paths {
					c += "paths = [\"/a\"]\n"
				}
				if hosts {
					c += "hosts = [\"a.com\"]\n"
				}
				dir := grantsDir(t, map[string]string{"g.toml": simple(tool, c)})
				_, ps, _ := policy.LoadGrants(dir, nil)
				want := ok(rule[0], paths) && ok(rule[1], hosts)
				if (len(ps) == 0) != want {
					t.Errorf("%s paths=%v hosts=%v: problems %v, want valid %v", tool, paths, hosts, ps, want)
				}
			}
		}
		// An empty list is no list: required means at least one.
		dir := grantsDir(t, map[string]string{"g.toml": simple(tool, "paths = []\nhosts = []\n")})
		_, ps, _ := policy.LoadGrants(dir, nil)
		if want := rule[0] != required && rule[1] != required; (len(ps) == 0) != want {
			t.Errorf("%s with empty lists: problems %v", tool, ps)
		}
	}
}

// TestAllProblemsSorted: every problem of every file, by file then line.
func TestAllProblemsSorted(t *testing.T) {
	dir := grantsDir(t, map[string]string{
		"b.toml": "tool = \"exec\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret = \"K\"\n",
		"a.toml": head + "[constraints]\npaths = [\"x\"]\npatterns = [\"*\"]\n",
		"c.toml": head + "[constraints]\npaths = [\"/ok\"]\n",
		"B.toml": head + "[constraints]\npaths = [\"/ok\"]\n",
	})
	_, ps, _ := policy.LoadGrants(dir, nil)
	var got []string
	for _, p := range ps {
		got = append(got, policy.FormatProblem(p))
	}
	want := []string{
		`B.toml: the file stem "B" is not a valid grant id (1 to 64 characters of [a-z0-9-])`,
		`a.toml:5: constraints.paths: "x" is not a valid absolute path: it is not absolute`,
		`a.toml:6: constraints.patterns: patterns are not supported`,
		`b.toml:1: tool: "exec" is not one of read_file, write_file, shell, http_fetch, remember, recall`,
		`b.toml:4: secret: "K" is not a valid secret name (1 to 64 characters of [a-z0-9_-])`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOneInvalidFileDeniesAll: a valid grant that would allow the call does
// not, while another file is invalid; and the problems travel with the
// decision for brokerd to print.
func TestOneInvalidFileDeniesAll(t *testing.T) {
	files := map[string]string{
		"notes-read.toml": simple("read_file", `paths = ["/home/kyle/notes"]`),
		"typo.toml":       "tool = \"read_file\"\nmode = \"dney\"\nmax_taint = \"secret\"\n",
	}
	dir := grantsDir(t, files)
	d := policy.Decide(dir, request("read_file", `{"path":"/home/kyle/notes/a.md"}`), private, now)
	if got := outcomeName(d); got != "grants_invalid" {
		t.Fatalf("got %s", got)
	}
	if ps := d.Problems(); len(ps) != 1 || ps[0].File != "typo.toml" {
		t.Errorf("problems %v", ps)
	}
	if _, err := d.Claim(); err == nil {
		t.Error("claimed a grants_invalid decision")
	}
	if err := os.Remove(filepath.Join(dir, "typo.toml")); err != nil {
		t.Fatal(err)
	}
	d = policy.Decide(dir, request("read_file", `{"path":"/home/kyle/notes/a.md"}`), private, now)
	if got := outcomeName(d); got != "allowed" || d.Problems() != nil {
		t.Errorf("after the fix: got %s, problems %v", got, d.Problems())
	}
}

// TestChangeAppliesToNextCall: no cache; an edit between two calls decides
// the second.
func TestChangeAppliesToNextCall(t *testing.T) {
	dir := grantsDir(t, map[string]string{"g.toml": simple("read_file", `paths = ["/n"]`)})
	req := request("read_file", `{"path":"/n/a"}`)
	if got := outcomeName(policy.Decide(dir, req, private, now)); got != "allowed" {
		t.Fatalf("first: %s", got)
	}
	deny := strings.Replace(simple("read_file", `paths = ["/n"]`), `"auto"`, `"deny"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "g.toml"), []byte(deny), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := outcomeName(policy.Decide(dir, req, private, now)); got != "denied_by_grant" {
		t.Errorf("after the edit: %s", got)
	}
}

func TestOtherFilesIgnored(t *testing.T) {
	dir := grantsDir(t, map[string]string{
		"g.toml":      simple("read_file", `paths = ["/n"]`),
		"README":      "not a grant",
		"g.toml.swp":  "\x00\x01",
		"h.TOML":      "junk",
		"notes.toml~": "junk",
	})
	set, ps, err := policy.LoadGrants(dir, nil)
	if err != nil || len(ps) != 0 || set.Len() != 1 {
		t.Errorf("set %v, problems %v, err %v", set, ps, err)
	}
}

func TestEmptyDirIsValid(t *testing.T) {
	d := policy.Decide(grantsDir(t, nil), request("read_file", `{"path":"/a"}`), private, now)
	if got := outcomeName(d); got != "no_grant" {
		t.Errorf("got %s", got)
	}
}

func TestMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	set, ps, err := policy.LoadGrants(dir, nil)
	if err == nil || set != nil || ps != nil {
		t.Fatalf("set %v, problems %v, err %v", set, ps, err)
	}
	d := policy.Decide(dir, request("read_file", `{"path":"/a"}`), private, now)
	ps = d.Problems()
	if got := outcomeName(d); got != "grants_invalid" || len(ps) != 1 || ps[0].File != "." {
		t.Errorf("got %s, problems %v", got, ps)
	}
}

// TestNotRegularFiles: a directory or a FIFO named *.toml is a problem, and
// reading the FIFO does not block.
func TestNotRegularFiles(t *testing.T) {
	dir := grantsDir(t, nil)
	if err := os.Mkdir(filepath.Join(dir, "d.toml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "f.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ps, err := policy.LoadGrants(dir, nil)
	if err != nil || len(ps) != 2 {
		t.Fatalf("problems %v, err %v", ps, err)
	}
	for _, p := range ps {
		if !strings.Contains(p.Problem, "cannot be read: not a regular file") {
			t.Errorf("%s", policy.FormatProblem(p))
		}
	}
}

func TestTooLarge(t *testing.T) {
	big := head + "[constraints]\npaths = [\"/a\"]\n" + "#" + strings.Repeat("x", policy.MaxGrantFileBytes) + "\n"
	_, ps, _ := policy.LoadGrants(grantsDir(t, map[string]string{"g.toml": big}), nil)
	if len(ps) != 1 || !strings.Contains(ps[0].Problem, "larger than") {
		t.Errorf("problems %v", ps)
	}
}

func TestFormatProblem(t *testing.T) {
	line := uint64(3)
	for _, tc := range []struct {
		p    wire.GrantProblem
		want string
	}{
		{wire.GrantProblem{File: "a.toml", Line: &line, Problem: "bad"}, "a.toml:3: bad"},
		{wire.GrantProblem{File: "a.toml", Problem: "bad"}, "a.toml: bad"},
		{wire.GrantProblem{File: "\x1b[31mx.toml", Problem: "a\nb\u0085c\xff"}, `\u001b[31mx.toml: a\u000ab\u0085c\xff`},
	} {
		if got := policy.FormatProblem(tc.p); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestSpecExample: the grant file M3a §3 shows, verbatim, loads and allows
// what it says.
func TestSpecExample(t *testing.T) {
	example := `# grants/notes-read.toml
tool = "read_file"
mode = "auto"
max_taint = "secret"
result_class = "private"
untrusted = false
expires = "2027-01-01T00:00:00.000Z"

[constraints]
paths = ["/home/kyle/notes"]
`
	dir := grantsDir(t, map[string]string{"notes-read.toml": example})
	d := policy.Decide(dir, request("read_file", `{"path":"/home/kyle/notes/todo.md"}`), policy.State{Taint: wire.Secret}, now)
	g, _ := d.Grant()
	if got := outcomeName(d); got != "allowed" || g.ID != "notes-read" || g.Untrusted || g.ResultClass != wire.Private {
		t.Errorf("got %s, grant %+v", got, g)
	}
}
