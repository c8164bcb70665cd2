package bxctl

import (
	"bytes"
	"strings"
	"testing"
)

func TestBadArgumentsAreUsageErrors(t *testing.T) {
	for _, args := range []string{
		"approve",          // the id is required
		"approve -1",       // ids are unsigned
		"approve 4 5",      // one id
		"refuse x",         // not a number
		"grants",           // a group, not a command
		"audit verify --x", // unknown flag
		"chat --say",       // --say needs its text
	} {
		var out, errs bytes.Buffer
		code := Main("bxctl", strings.Fields(args), strings.NewReader(""), &out, &errs)
		if code != 2 || out.Len() != 0 || !strings.HasPrefix(errs.String(), "bxctl: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and an error on stderr", args, code, out.String(), errs.String())
		}
	}
}
