package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestToolkitIsAHiddenRole: argv[0] "toolkit" (the tool image runs
// /bin/toolkit) reaches roles/toolkit, and nothing lists it: it is not
// a program for people, and links makes no symlink for it.
func TestToolkitIsAHiddenRole(t *testing.T) {
	var out, errb bytes.Buffer
	req := `{"tool":"shell","path":null,"content":null,"command":"echo hi","cwd":null,"url":null,"proxy":null,"output_bytes":100,"mounts":[],"header":null,"ca":null,"secret":null}` + "\n"
	code := run([]string{"/bin/toolkit"}, strings.NewReader(req), &out, &errb)
	if code != 0 || out.String() != `{"status":"result","head":"","text":"hi\n","tail":""}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if role("toolkit") != nil {
		t.Fatal("toolkit is in the role list, so links and help would show it")
	}
	_, help, _ := call("boxmaker", "--help")
	if strings.Contains(help, "toolkit") {
		t.Fatalf("help mentions the toolkit:\n%s", help)
	}
}
