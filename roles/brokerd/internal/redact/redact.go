// Package redact replaces a secret's value in a tool's output, in the forms
// a tool can put it in without effort: its exact bytes, base64 and base64url
// (padded or not, at any of the three offsets a longer stream can give it),
// hex in any case, and percent-encoding, with encoders' line wrapping in
// between. It is the second line of defence: a result from a grant with a
// secret is class secret whatever redaction finds, and the session's taint
// is what keeps the value from leaving (docs/decisions.md, "Redacting a
// secret's encodings").
package redact

import (
	"bytes"
	"fmt"
	"io"
)

// maxPasses bounds the passes over a text. A value that contains '[' or ']'
// can appear anew where a marker meets the text after it ("]x" in "]xx");
// each pass removes such places, and a text built to make the next pass
// find another is replaced whole once the bound is reached.
const maxPasses = 4

// Redactor replaces one secret's value, in every form it knows, by
// "[secret:<name>]". Printing it with fmt shows only the name.
type Redactor struct {
	name string
	// The value is behind a pointer: fmt, printing a Redactor held in an
	// unexported field it cannot call Format on, shows the address.
	st *state
}

type state struct {
	marker string
	exact  matcher
	forms  []form
	// inRaw finds the exact bytes in the text; inStripped the forms
	// st.stripped lists (indexes into forms) in the text without
	// whitespace; inFolded lists those found in its folded copy.
	inRaw, inStripped  *finder
	stripped, inFolded []int
	// markers: some form is part of the marker's text, or can run into
	// one from the text around it; only then are markers looked for.
	markers bool
	// cross: the value contains '[' or ']', so a replacement can make a
	// new occurrence where the marker meets the text beside it.
	cross bool
}

// New returns a Redactor for the secret name with the given value. The name
// is shown in the marker; bytes outside [A-Za-z0-9._-] become '_' and it
// is cut at 64 (the grant loader allows only [a-z0-9_-]{1,64}), so that the
// marker never contains '[', ']' or a line break. An empty value redacts
// nothing.
func New(name string, value []byte) *Redactor {
	n := []byte(name)
	if len(n) > 64 {
		n = n[:64]
	}
	for i, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			n[i] = '_'
		}
	}
	if len(n) == 0 {
		n = []byte("_")
	}
	st := &state{marker: "[secret:" + string(n) + "]"}
	if len(value) > 0 {
		st.exact, _ = newMatcher(append([]byte(nil), value...), false)
		st.forms = encodedForms(value)
		st.inRaw = newFinder([]*matcher{&st.exact})
	}
	var ms []*matcher
	for i := range st.forms {
		if st.forms[i].view == folded {
			st.inFolded = append(st.inFolded, i)
			continue
		}
		st.stripped = append(st.stripped, i)
		ms = append(ms, &st.forms[i].m)
	}
	st.inStripped = newFinder(ms)
	// Compared in lower case: hex and %XX are found in any case, so a
	// name "DEADBEEF" holds the hex form "deadbeef".
	m := bytes.ToLower([]byte(st.marker))
	for _, p := range st.searched() {
		if bytes.Contains(m, bytes.ToLower(p)) {
			st.markers = true
		}
		if bytes.ContainsAny(p, "[]") {
			st.markers, st.cross = true, true
		}
	}
	return &Redactor{name: string(n), st: st}
}

// String returns s with every occurrence of the value's forms replaced.
func (r *Redactor) String(s string) string {
	out := r.redact([]byte(s))
	if out == nil {
		return s
	}
	return string(out)
}

// Bytes returns a copy of b with every occurrence of the value's forms
// replaced by the marker. Occurrences that overlap become one marker; an
// encoded form's marker covers the whitespace inside it. Afterwards no form
// occurs in the result except inside a marker's own text (a value "secret"
// or "[" is part of every marker), so Bytes of its result is that result.
func (r *Redactor) Bytes(b []byte) []byte {
	out := r.redact(b)
	if out == nil {
		return append([]byte{}, b...)
	}
	return out
}

// redact returns nil when t holds no form outside a marker.
func (r *Redactor) redact(t []byte) []byte {
	var out []byte
	for range maxPasses {
		spans := r.st.find(t)
		if len(spans) == 0 {
			return out
		}
		out = r.st.replace(t, spans)
		if !r.st.cross {
			return out
		}
		t = out
	}
	if len(r.st.find(t)) == 0 {
		return out
	}
	return []byte(r.st.marker)
}

// Forms returns every form searched for, each a new slice: first the exact
// bytes, then the encoded forms, with base64's end-of-stream variants
// (padded and unpadded) and hex and %XX in lower and upper case. The
// Redactor finds the encoded ones with whitespace between any two of their
// characters, and hex and %XX in mixed case too: scanning a file for these
// strings alone misses a wrapped form, where Bytes does not.
func (r *Redactor) Forms() [][]byte {
	var out [][]byte
	for _, p := range r.st.searched() {
		out = append(out, append([]byte(nil), p...))
	}
	return out
}

// searched lists the exact bytes and every encoded form as it can occur.
func (st *state) searched() [][]byte {
	var out [][]byte
	add := func(p []byte) {
		for _, x := range out {
			if string(x) == string(p) {
				return
			}
		}
		out = append(out, p)
	}
	if len(st.exact.pat) > 0 {
		add(st.exact.pat)
	}
	for _, f := range st.forms {
		add(f.m.pat)
		for _, t := range f.tails {
			add(append(append([]byte(nil), f.m.pat...), t...))
		}
		if f.fold {
			add(bytes.ToUpper(f.m.pat))
		}
	}
	return out
}

// Format prints only the name, for every verb: the value is never printed.
func (r Redactor) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, r.GoString())
}

// GoString prints only the name.
func (r Redactor) GoString() string {
	return "redact.Redactor(" + r.name + ")"
}
