package redact_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/redact"
)

// TestDegenerateTextsAreLinear: texts that are one long occurrence after
// another, or almost (the worst case for a matcher that tries every start,
// or restarts at each near miss), and the chain a replacement can make.
// A quadratic step takes minutes on 256 KiB; the bound is loose enough for
// -race on a busy machine.
func TestDegenerateTextsAreLinear(t *testing.T) {
	const n = 1 << 18
	a := strings.Repeat("a", 64)
	for _, tc := range []struct{ what, value, text, want string }{
		{"value a..a in a run of a", a, strings.Repeat("a", n), "[secret:k]"},
		{"value a..ab in a run of a", a[1:] + "b", strings.Repeat("a", n), ""},
		{"value (ab)..c in a run of ab", strings.Repeat("ab", 40) + "c", strings.Repeat("ab", n/2), ""},
		{"hex of a..a in 6161..", a, strings.Repeat("61", n/2), "[secret:k]"},
		{"hex of a..ab in 6161..", a[1:] + "b", strings.Repeat("61", n/2), ""},
		{"base64 of a..az in base64 of a..", a[4:] + "z", base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", n*3/4))), ""},
		{"hex with a space in each byte", a[:40], strings.Repeat("6 1 ", n/4), "[secret:k] "},
		{"%XX of a..a", a[:40], strings.Repeat("%61", n/3), "[secret:k]"},
		{"a chain past the bound", "]x", "]" + strings.Repeat("x", n), "[secret:k]"},
	} {
		start := time.Now()
		got := redact.New("k", []byte(tc.value)).String(tc.text)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: %v", tc.what, took)
		}
		want := tc.want
		if want == "" {
			want = tc.text
		}
		if got != want {
			t.Errorf("%s: got %d bytes, want %d", tc.what, len(got), len(want))
		}
	}
}
