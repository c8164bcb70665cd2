package policy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"boxmaker/policy"
	"boxmaker/wire"
)

// Each fuzz target checks policy's answer against the oracle's differently
// written check (oracle_test.go), both ways where the oracle is exact.

func FuzzPath(f *testing.F) {
	for _, tc := range pathCases {
		f.Add(tc.path, "/a")
	}
	for _, tc := range []struct{ grant, p string }{{"/home/kyle/notes", "/home/kyle/notes2/a.md"}, {"/", "/etc/passwd"}} {
		f.Add(tc.grant, tc.p)
	}
	f.Fuzz(func(t *testing.T, p, q string) {
		if got, want := policy.ValidPath(p), oraclePath(p); got != want {
			t.Fatalf("ValidPath(%q) = %v, oracle %v", p, got, want)
		}
		want := oraclePath(p) && oraclePath(q) && oracleInside(p, q)
		if got := policy.PathInside(p, q); got != want {
			t.Fatalf("PathInside(%q, %q) = %v, oracle %v", p, q, got, want)
		}
		// Rule 9 meets protected paths both ways.
		if oraclePath(p) && oraclePath(q) {
			got, want := policy.Overlap(p, q), p == q || oracleInside(p, q) || oracleInside(q, p)
			if (got != "") != want || got == "is" != (p == q) || got == "contains" != (p != q && oracleInside(p, q)) {
				t.Fatalf("Overlap(%q, %q) = %q, oracle %v", p, q, got, want)
			}
		}
	})
}

func FuzzHost(f *testing.F) {
	for _, tc := range hostCases {
		f.Add(tc.host, "www.example.com")
		f.Add("*."+tc.host, tc.host)
	}
	f.Fuzz(func(t *testing.T, p, h string) {
		if got, want := policy.ValidHost(h), oracleHost(h); got != want {
			t.Fatalf("ValidHost(%q) = %v, oracle %v", h, got, want)
		}
		if got, want := policy.ValidHostPattern(p), oraclePattern(p); got != want {
			t.Fatalf("ValidHostPattern(%q) = %v, oracle %v", p, got, want)
		}
		want := oraclePattern(p) && oracleHost(h) &&
			(p == h || strings.HasPrefix(p, "*.") && strings.HasSuffix(h, p[1:]))
		if got := policy.HostMatches(p, h); got != want {
			t.Fatalf("HostMatches(%q, %q) = %v, oracle %v", p, h, got, want)
		}
	})
}

func FuzzURL(f *testing.F) {
	for _, tc := range urlCases {
		f.Add(tc.url)
	}
	f.Fuzz(func(t *testing.T, u string) {
		host, err := policy.ParseURL(u)
		want, ok := oracleURLHost(u)
		if (err == nil) != ok || host != want {
			t.Fatalf("ParseURL(%q) = %q, %v; oracle %q, %v", u, host, err, want, ok)
		}
	})
}

// FuzzParseArgs: no panic, and whatever is accepted is, read by
// encoding/json's token stream, one object with exactly the tool's members,
// each once, each a string, with a valid path or URL.
func FuzzParseArgs(f *testing.F) {
	for _, tc := range argCases {
		f.Add(uint8(tc.tool), tc.raw)
	}
	f.Fuzz(func(t *testing.T, tool uint8, raw string) {
		args, err := policy.ParseArgs(policy.Tool(tool), raw)
		if err != nil {
			if args != nil {
				t.Fatalf("error %v with args %#v", err, args)
			}
			return
		}
		name := policy.Tool(tool).String()
		if args.Tool().String() != name {
			t.Fatalf("tool %q parsed as %s", name, args.Tool())
		}
		if !utf8.ValidString(raw) {
			t.Fatalf("accepted invalid UTF-8: %q", raw)
		}
		members, err := tokenMembers(raw)
		if err != nil {
			t.Fatalf("accepted %q: %v", raw, err)
		}
		got, ok := oracleArgs(name, genArgs{members: members})
		if !ok {
			t.Fatalf("accepted %q, which the oracle refuses", raw)
		}
		var want map[string]string
		switch a := args.(type) {
		case policy.ReadFileArgs:
			want = map[string]string{"path": a.Path}
		case policy.WriteFileArgs:
			want = map[string]string{"path": a.Path, "content": a.Content}
		case policy.ShellArgs:
			want = map[string]string{"command": a.Command}
			if a.Cwd != nil {
				want["cwd"] = *a.Cwd
			}
		case policy.HTTPFetchArgs:
			want = map[string]string{"url": a.URL, "host": a.Host}
		case policy.RememberArgs:
			want = map[string]string{"title": a.Title, "text": a.Text}
			if a.ID != nil {
				want["id"] = *a.ID
			}
		case policy.RecallArgs:
			want = map[string]string{"query": a.Query}
			if a.ID != nil {
				want = map[string]string{"id": *a.ID}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%q: parsed %v, oracle %v", raw, want, got)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%q: parsed %v, oracle %v", raw, want, got)
			}
		}
	})
}

// tokenMembers reads raw as one flat JSON object with encoding/json's token
// stream, which keeps names exactly as written and repeats duplicates.
func tokenMembers(raw string) ([]member, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var ms []member
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		m := member{name: name.(string), kind: 'n'}
		var s string
		if bytes.HasPrefix(v, []byte(`"`)) && json.Unmarshal(v, &s) == nil {
			m.kind, m.s = 's', s
		}
		ms = append(ms, m)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("object not closed")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return ms, nil
}

// FuzzGrantFile: for any grant file wire decodes, policy's loading rules
// (rule 9 aside) accept it exactly when the oracle does; the secret rules
// are the reason for this target, so the seeds are the secret table's.
func FuzzGrantFile(f *testing.F) {
	for _, seed := range []string{
		fetchHead + "secret_header = \"Authorization\"\nsecret_format = \"Bearer {}\"\nsecret_hosts = [\"api.example.com\", \"*.a.example.com\"]\n" + wildHosts,
		fetchHead + "secret_header = \"Host\"\nsecret_hosts = [\"*.api.example.com\"]\n" + apiHosts,
		shellHead + "secret_deliver = \"file\"\n[constraints]\npaths = [\"/a\"]\n",
		shellHead + "secret_deliver = \"env\"\nsecret_header = \"A\"\n",
		"tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret_format = \"{}\"\n[constraints]\npaths = [\"/a\"]\n",
		// Issue 17: the memory tools and job-scoped grants.
		"tool = \"remember\"\nmode = \"ask\"\nmax_taint = \"private\"\njob = \"daily-digest\"\n",
		"tool = \"recall\"\nmode = \"auto\"\nmax_taint = \"secret\"\njob = \"Daily\"\n[constraints]\npaths = [\"/a\"]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := wire.DecodeGrant(data)
		if err != nil {
			return
		}
		ps := policy.FileProblems("g.toml", data)
		if want := oracleGrantValid("g", g); (len(ps) == 0) != want {
			t.Fatalf("%q: problems %v, oracle valid %v", data, ps, want)
		}
	})
}
