package redact_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/redact"
)

// TestFormatShowsOnlyTheName: fmt, with every verb and inside structs
// (where fmt reaches unexported fields by reflection and cannot call
// methods), prints the name and never the value or any of its forms.
func TestFormatShowsOnlyTheName(t *testing.T) {
	r := redact.New("api", []byte(key))
	type holder struct {
		Exported   *redact.Redactor
		unexported *redact.Redactor
		value      redact.Redactor
	}
	h := holder{Exported: r, unexported: r, value: *r}
	var printed []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		printed = append(printed, fmt.Sprintf(verb, r), fmt.Sprintf(verb, *r), fmt.Sprintf(verb, h), fmt.Sprintf(verb, &h))
	}
	printed = append(printed, fmt.Sprint(r), fmt.Sprintln(r, *r), r.GoString(),
		fmt.Errorf("run: %w, redactor %v", errors.New("x"), r).Error())
	for _, p := range printed {
		for _, f := range r.Forms() {
			if strings.Contains(p, string(f)) {
				t.Fatalf("%q shows the form %q", p, f)
			}
		}
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		if got := fmt.Sprintf(verb, r); got != "redact.Redactor(api)" {
			t.Errorf("%s: %q, want redact.Redactor(api)", verb, got)
		}
	}
	var nilR *redact.Redactor
	if got := fmt.Sprint(nilR); got != "<nil>" {
		t.Errorf("a nil Redactor prints %q", got)
	}
}
