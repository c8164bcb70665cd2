package policy_test

import (
	"reflect"
	"strings"
	"testing"

	"boxmaker/policy"
)

func ptr(s string) *string { return &s }

// argCases are shared with the fuzz seeds: want nil means invalid.
var argCases = []struct {
	tool policy.Tool
	raw  string
	want policy.Args
}{
	{policy.ReadFile, `{"path":"/a"}`, policy.ReadFileArgs{"/a"}},
	{policy.ReadFile, " \n{ \"path\" : \"/a\" }\t", policy.ReadFileArgs{"/a"}},
	{policy.ReadFile, `{"path":"\/a\u00e9"}`, policy.ReadFileArgs{"/aé"}},
	{policy.ReadFile, `{}`, nil},
	{policy.ReadFile, `{"path":null}`, nil},
	{policy.ReadFile, `{"path":1}`, nil},
	{policy.ReadFile, `{"path":true}`, nil},
	{policy.ReadFile, `{"path":["/a"]}`, nil},
	{policy.ReadFile, `{"path":{"x":"/a"}}`, nil},
	{policy.ReadFile, `{"Path":"/a"}`, nil},
	{policy.ReadFile, `{"PATH":"/a"}`, nil},
	{policy.ReadFile, `{"path":"/a","Path":"/b"}`, nil},
	{policy.ReadFile, `{"path":"/a","path":"/a"}`, nil},
	{policy.ReadFile, `{"path":"/a","extra":1}`, nil},
	{policy.ReadFile, `{"path":"/a"} `, policy.ReadFileArgs{"/a"}},
	{policy.ReadFile, `{"path":"/a"}x`, nil},
	{policy.ReadFile, `{"path":"/a"}{}`, nil},
	{policy.ReadFile, `{"path":"/a"`, nil},
	{policy.ReadFile, `null`, nil},
	{policy.ReadFile, `"/a"`, nil},
	{policy.ReadFile, `[{"path":"/a"}]`, nil},
	{policy.ReadFile, ``, nil},
	{policy.ReadFile, "{\"path\":\"/a\xff\"}", nil},
	{policy.ReadFile, `{"path":"/a\ud800"}`, nil},
	{policy.ReadFile, `{"path":"/a\u0000"}`, nil},
	{policy.ReadFile, `{"path":"a"}`, nil},
	{policy.ReadFile, `{"path":"/a/../b"}`, nil},
	{policy.ReadFile, `{"path":"/a/"}`, nil},
	{policy.WriteFile, `{"path":"/a/b","content":"hi"}`, policy.WriteFileArgs{"/a/b", "hi"}},
	{policy.WriteFile, `{"content":"","path":"/a/b"}`, policy.WriteFileArgs{"/a/b", ""}},
	{policy.WriteFile, `{"path":"/a/b"}`, nil},
	{policy.WriteFile, `{"content":"x"}`, nil},
	{policy.WriteFile, `{"path":"/a/b","content":null}`, nil},
	{policy.WriteFile, `{"path":"/a/b","content":42}`, nil},
	{policy.WriteFile, `{"path":"a/b","content":"x"}`, nil},
	{policy.Shell, `{"command":"ls -la"}`, policy.ShellArgs{Command: "ls -la"}},
	{policy.Shell, `{"command":"ls","cwd":"/tmp"}`, policy.ShellArgs{"ls", ptr("/tmp")}},
	{policy.Shell, `{"command":""}`, policy.ShellArgs{Command: ""}},
	{policy.Shell, `{"command":"ls","cwd":null}`, nil},
	{policy.Shell, `{"command":"ls","cwd":"tmp"}`, nil},
	{policy.Shell, `{"command":"ls","cwd":"/tmp/"}`, nil},
	{policy.Shell, `{"cwd":"/tmp"}`, nil},
	{policy.Shell, `{"command":["ls"]}`, nil},
	{policy.Shell, `{"command":"ls","env":{}}`, nil},
	{policy.HTTPFetch, `{"url":"https://example.com/a"}`, policy.HTTPFetchArgs{"https://example.com/a", "example.com"}},
	{policy.HTTPFetch, `{"url":"http://example.com/a"}`, nil},
	{policy.HTTPFetch, `{"url":"https://EXAMPLE.com/"}`, nil},
	{policy.HTTPFetch, `{"url":"https://example.com:80/"}`, nil},
	{policy.HTTPFetch, `{"URL":"https://example.com/"}`, nil},
	{policy.HTTPFetch, `{}`, nil},
	{policy.HTTPFetch, `{"url":"https://example.com/","method":"POST"}`, nil},
	// Issue 17's memory tools.
	{policy.Remember, `{"title":"Kyle","text":"likes tea"}`, policy.RememberArgs{Title: "Kyle", Text: "likes tea"}},
	{policy.Remember, `{"text":"","title":"t"}`, policy.RememberArgs{Title: "t"}},
	{policy.Remember, `{"title":"t","text":"x","id":"n-1"}`, policy.RememberArgs{"t", "x", ptr("n-1")}},
	{policy.Remember, `{"title":"` + strings.Repeat("a", 200) + `","text":"` + strings.Repeat("b", 16384) + `"}`,
		policy.RememberArgs{Title: strings.Repeat("a", 200), Text: strings.Repeat("b", 16384)}},
	{policy.Remember, `{"title":"` + strings.Repeat(`\u00e9`, 100) + `","text":""}`, policy.RememberArgs{Title: strings.Repeat("é", 100)}},
	{policy.Remember, `{"title":"` + strings.Repeat("a", 201) + `","text":""}`, nil},
	{policy.Remember, `{"title":"` + strings.Repeat(`\u00e9`, 101) + `","text":""}`, nil},
	{policy.Remember, `{"title":"t","text":"` + strings.Repeat("b", 16385) + `"}`, nil},
	{policy.Remember, `{"title":"","text":"x"}`, nil},
	{policy.Remember, `{"title":"t"}`, nil},
	{policy.Remember, `{"text":"x"}`, nil},
	{policy.Remember, `{"title":"t","text":"x","id":""}`, nil},
	{policy.Remember, `{"title":"t","text":"x","id":"N-1"}`, nil},
	{policy.Remember, `{"title":"t","text":"x","id":"../core"}`, nil},
	{policy.Remember, `{"title":"t","text":"x","id":null}`, nil},
	{policy.Remember, `{"title":"t","text":"x","label":"trusted"}`, nil},
	{policy.Remember, `{"title":"t","text":"x","untrusted":false}`, nil},
	{policy.Remember, `{"Title":"t","text":"x"}`, nil},
	{policy.Remember, `{"title":"t","text":"x","title":"u"}`, nil},
	{policy.Remember, `{"title":"t","text":"\ud800"}`, nil},
	{policy.Recall, `{"query":"tea"}`, policy.RecallArgs{Query: "tea"}},
	{policy.Recall, `{"id":"n-1"}`, policy.RecallArgs{ID: ptr("n-1")}},
	{policy.Recall, `{"query":"` + strings.Repeat("q", 500) + `"}`, policy.RecallArgs{Query: strings.Repeat("q", 500)}},
	{policy.Recall, `{"query":"` + strings.Repeat("q", 501) + `"}`, nil},
	{policy.Recall, `{"query":""}`, nil},
	{policy.Recall, `{}`, nil},
	{policy.Recall, `{"query":"tea","id":"n-1"}`, nil},
	{policy.Recall, `{"id":"n_1"}`, nil},
	{policy.Recall, `{"id":"` + strings.Repeat("a", 65) + `"}`, nil},
	{policy.Recall, `{"query":null}`, nil},
	{policy.Recall, `{"query":"tea","limit":5}`, nil},
	{policy.Recall, `{"path":"/a"}`, nil},
	{0, `{"path":"/a"}`, nil},
	{7, `{"query":"tea"}`, nil},
	{9, `{"path":"/a"}`, nil},
}

func TestParseArgs(t *testing.T) {
	for _, tc := range argCases {
		got, err := policy.ParseArgs(tc.tool, tc.raw)
		if tc.want == nil {
			if err == nil || got != nil {
				t.Errorf("%s %q: accepted as %#v", tc.tool, tc.raw, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: got %#v, %v; want %#v", tc.tool, tc.raw, got, err, tc.want)
		}
	}
}

// TestInvalidArgumentsBeforeMatching: bad arguments are invalid_arguments
// even where no grant exists for the tool, and even under a deny grant.
func TestInvalidArgumentsBeforeMatching(t *testing.T) {
	empty := grantsDir(t, nil)
	d := policy.Decide(empty, request("read_file", `{"path":"rel"}`), private, now)
	if got := outcomeName(d); got != "invalid_arguments" || d.ArgsError() == nil {
		t.Errorf("no grants: got %s (%v)", got, d.ArgsError())
	}
	deny := grantsDir(t, map[string]string{"d.toml": "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"/a\"]\n"})
	d = policy.Decide(deny, request("read_file", `{"path":"/a","x":1}`), private, now)
	if got := outcomeName(d); got != "invalid_arguments" {
		t.Errorf("deny grant: got %s", got)
	}
}
