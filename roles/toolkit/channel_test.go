package toolkit

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"boxmaker/wire"
)

// TestMainMakesItselfNonDumpable: before anything else runs, the toolkit
// is not dumpable, so no process without CAP_SYS_PTRACE reaches its
// descriptors or memory (the end-to-end proof, in a container, is
// podman's TestAnswerCannotBeForged).
func TestMainMakesItselfNonDumpable(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	callRaw(t, "not a request\n")
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		t.Fatalf("dumpable %d after Main (%v)", d, err)
	}
}

// TestNotesAreWhatBrokerdTakes: notes and failure messages are UTF-8
// without NUL and at most wire.ToolkitNoteBytes, cut at a character.
func TestNotesAreWhatBrokerdTakes(t *testing.T) {
	for name, in := range map[string]string{
		"short":    "cannot read /x: no such file or directory",
		"NUL":      "a\x00b",
		"not UTF8": "caf\xe9",
		"long":     strings.Repeat("é", wire.ToolkitNoteBytes),
	} {
		got := clip(in)
		if !utf8.ValidString(got) || strings.Contains(got, "\x00") || len(got) > wire.ToolkitNoteBytes {
			t.Errorf("%s: %d bytes, %.40q", name, len(got), got)
		}
		if name == "short" && got != in || name == "long" && !strings.HasSuffix(got, "é [cut]") {
			t.Errorf("%s: %.40q", name, got)
		}
		if res := failed(in); res.Text != got {
			t.Errorf("%s: failed() does not clip", name)
		}
	}
}
