package toolkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

func str(s string) *string { return &s }

// call runs Main on one request and decodes its answer.
func call(t *testing.T, req Request) (Response, int) {
	t.Helper()
	b, err := wire.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return callRaw(t, string(b)+"\n")
}

func callRaw(t *testing.T, in string) (Response, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main("toolkit", nil, strings.NewReader(in), &out, &errb)
	line, ok := strings.CutSuffix(out.String(), "\n")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout is not one line: %q (stderr %q)", out.String(), errb.String())
	}
	var res Response
	if err := wire.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return res, code
}

func TestBadRequestsAreFailedWithStatus2(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          "",
		"not json":       "hello\n",
		"unknown member": `{"tool":"read_file","path":"/x","content":null,"command":null,"cwd":null,"url":null,"proxy":null,"output_bytes":10,"mounts":[],"header":null,"ca":null,"secret":null,"extra":1}` + "\n",
		"missing member": `{"tool":"read_file","path":"/x"}` + "\n",
		"zero cap":       `{"tool":"read_file","path":"/x","content":null,"command":null,"cwd":null,"url":null,"proxy":null,"output_bytes":0,"mounts":[],"header":null,"ca":null,"secret":null}` + "\n",
	} {
		res, code := callRaw(t, in)
		if code != exitBadRequest || res.Status != "failed" || !strings.HasPrefix(res.Text, "toolkit: ") {
			t.Errorf("%s: %d %+v", name, code, res)
		}
	}
	var out, errb bytes.Buffer
	if code := Main("toolkit", []string{"x"}, strings.NewReader(""), &out, &errb); code != exitBadRequest || out.Len() != 0 {
		t.Errorf("arguments: exit %d, stdout %q", code, out.String())
	}
}

func TestMembersMustFitTheTool(t *testing.T) {
	for _, req := range []Request{
		{Tool: "read_file", OutputBytes: 10},
		{Tool: "read_file", Path: str("/x"), Command: str("ls"), OutputBytes: 10},
		{Tool: "write_file", Path: str("/x"), OutputBytes: 10},
		{Tool: "shell", Path: str("/x"), Command: str("ls"), OutputBytes: 10},
		{Tool: "http_fetch", URL: str("https://example.com/"), OutputBytes: 10},
		{Tool: "ls", OutputBytes: 10},
	} {
		res, code := call(t, req)
		if code != exitFailed || res.Status != "failed" {
			t.Errorf("%+v: %d %+v", req, code, res)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := write("a.md", "hello, wörld\n")
	bin := write("b.bin", "ab\x00cd")
	latin1 := write("c.txt", "caf\xe9")
	long := write("d.txt", strings.Repeat("é", 10)) // 20 bytes
	if err := os.Symlink("/nonexistent/.ssh/id", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, status, text, tail string
		max                      int64
	}{
		{text, "result", "hello, wörld\n", "", 100},
		{bin, "result", "", "binary file, 5 bytes, not shown", 100},
		{latin1, "result", "", "binary file, 4 bytes, not shown", 100},
		{long, "result", "ééé", "", 7}, // cut inside the fourth é
		{long, "result", strings.Repeat("é", 10), "", 20},
		{dir, "failed", "cannot read " + dir + ": it is a directory", "", 100},
		{filepath.Join(dir, "none"), "failed", "cannot read " + filepath.Join(dir, "none") + ": no such file or directory", "", 100},
		{filepath.Join(dir, "link"), "failed", "cannot read " + filepath.Join(dir, "link") + ": no such file or directory", "", 100},
	} {
		res, _ := call(t, Request{Tool: "read_file", Path: str(tc.path), OutputBytes: tc.max})
		if res != (Response{Status: tc.status, Text: tc.text, Tail: tc.tail}) {
			t.Errorf("%s (max %d): %+v", tc.path, tc.max, res)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	res, code := call(t, Request{Tool: "write_file", Path: str(p), Content: str("new"), OutputBytes: 100})
	if code != 0 || res.Text != "wrote 3 bytes to "+p {
		t.Fatalf("%d %+v", code, res)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("file holds %q", b)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	res, _ = call(t, Request{Tool: "write_file", Path: str(link), Content: str("x"), OutputBytes: 100})
	if res.Status != "failed" || !strings.Contains(res.Text, "symlink") {
		t.Fatalf("through a symlink: %+v", res)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	res, _ = call(t, Request{Tool: "write_file", Path: str(filepath.Join(dir, "no", "x")), Content: str("x"), OutputBytes: 100})
	if res.Status != "failed" || !strings.HasSuffix(res.Text, "no such file or directory") {
		t.Fatalf("missing parent: %+v", res)
	}
}

func TestShell(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Fatal("the shell tool needs /bin/sh:", err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		command    string
		cwd        *string
		max        int64
		text, tail string
	}{
		{"echo out; echo err >&2", nil, 100, "out\nerr\n", ""},
		{"pwd", str(dir), 100, dir + "\n", ""},
		{"true", nil, 100, "", "(no output)"},
		{"printf x; exit 3", nil, 100, "x", "[exit status 3]"},
		{"kill -9 $$", nil, 100, "", "[killed by signal 9 (killed)]"},
		{"printf 'a\\000b'", nil, 100, "", "binary output, 3 bytes, not shown"},
		{"printf 'a\\000b'; exit 1", nil, 100, "", "binary output, 3 bytes, not shown\n[exit status 1]"},
		{"yes | head -c 100000", nil, 10, "y\ny\ny\ny\ny\n", ""},
		{"echo $PATH $HOME", nil, 100, "/bin /tmp\n", ""},
	} {
		res, code := call(t, Request{Tool: "shell", Command: str(tc.command), Cwd: tc.cwd, OutputBytes: tc.max})
		if code != 0 || res != (Response{Status: "result", Text: tc.text, Tail: tc.tail}) {
			t.Errorf("%q: %d %+v", tc.command, code, res)
		}
	}
	res, _ := call(t, Request{Tool: "shell", Command: str("ls"), Cwd: str(filepath.Join(dir, "none")), OutputBytes: 100})
	if res.Status != "failed" || !strings.Contains(res.Text, "no such file or directory") {
		t.Errorf("missing cwd: %+v", res)
	}
}

func TestShellDoesNotWaitForBackgroundProcesses(t *testing.T) {
	res, _ := call(t, Request{Tool: "shell", Command: str("sleep 2 & echo started"), OutputBytes: 100})
	if res.Status != "result" || !strings.HasPrefix(res.Text, "started\n") {
		t.Fatalf("%+v", res)
	}
}

func TestProbeReportsEveryLine(t *testing.T) {
	res, _ := call(t, Request{Tool: "probe", OutputBytes: 4096})
	for _, name := range []string{"uid", "gid", "memory", "pids", "nofile", "nproc", "capeff", "nonewprivs", "interfaces", "rootfs"} {
		if !strings.Contains(res.Text, "\n"+name+" ") && !strings.HasPrefix(res.Text, name+" ") {
			t.Errorf("no %s line in %q", name, res.Text)
		}
	}
}

func TestTrimPartialRune(t *testing.T) {
	for in, want := range map[string]string{
		"":               "",
		"abc":            "abc",
		"ab\xc3":         "ab",
		"ab\xe2\x82":     "ab",
		"ab\xe2\x82\xac": "ab\xe2\x82\xac",
		"ab\xf0\x9f\x98": "ab",
		"ab\xff":         "ab\xff", // invalid, not incomplete: kept for isText to see
	} {
		if got := string(trimPartialRune([]byte(in))); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestFixtureRequests decodes the requests brokerd's podman package writes
// (its golden test keeps fixtures/toolkit current): the two copies of the
// protocol must agree.
func TestFixtureRequests(t *testing.T) {
	files, err := filepath.Glob("../../fixtures/toolkit/request-*.json")
	if err != nil || len(files) != 7 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		req, err := readRequest(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		want := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "request-"), ".json")
		if want = strings.TrimSuffix(want, "-secret"); req.Tool != want {
			t.Errorf("%s: tool %q", f, req.Tool)
		}
		if res := run(Request{Tool: req.Tool}); strings.Contains(res.Text, "unknown tool") {
			t.Errorf("%s: %s", f, res.Text)
		}
	}
}
