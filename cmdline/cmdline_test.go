package cmdline

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type env struct{ out *bytes.Buffer }

var sayResult error

type sayCmd struct {
	Word string `arg:""`
}

func (c *sayCmd) Run(e *env) error {
	e.out.WriteString(c.Word)
	return sayResult
}

type top struct {
	Say sayCmd `cmd:"" help:"say a word"`
}

func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		result   error
		code     int
		out, err string
	}{
		{"ok", []string{"say", "hi"}, nil, 0, "hi", ""},
		{"a command's own status", []string{"say", "hi"}, ExitCode(3), 3, "hi", ""},
		{"an error is printed and is 1", []string{"say", "hi"}, errors.New("it broke"), 1, "hi", "prog: it broke\n"},
		{"a bad command line is 2", []string{"shout"}, nil, UsageError, "", "run \"prog --help\" for usage"},
		{"help ends without os.Exit", []string{"--help"}, nil, 0, "say a word", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sayResult = tc.result
			var stdout, stderr bytes.Buffer
			e := &env{out: &stdout}
			code := Run(&top{}, tc.args, "prog", &stdout, &stderr, e)
			if code != tc.code || !strings.Contains(stdout.String(), tc.out) || !strings.Contains(stderr.String(), tc.err) {
				t.Fatalf("Run(%q) = %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out, tc.err)
			}
		})
	}
}

// A panic that is not kong's exit is not swallowed.
func TestRunPanicsPassThrough(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the command's own panic", r)
		}
	}()
	Run(&panicky{}, []string{"go"}, "prog", &bytes.Buffer{}, &bytes.Buffer{})
}

type panicky struct {
	Go goCmd `cmd:""`
}
type goCmd struct{}

func (goCmd) Run() error { panic("boom") }
