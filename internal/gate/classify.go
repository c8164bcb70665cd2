package main

import (
	"embed"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// allowedLicences are the licences a module may come under (SPDX ids).
// The Unlicense is a public-domain dedication with a permissive fallback
// grant and MIT's disclaimer: no conditions at all (decisions.md,
// "Licences of what is linked").
var allowedLicences = []string{"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "ISC", "MPL-2.0", "Unlicense"}

// The reference texts, one per allowed licence, named <SPDX id>.txt.
// "<<...>>" marks where a text names its holder or author: up to maxHole
// words of anything. Apache-2.0-appendix.txt is the "how to apply" appendix
// that many copies of Apache-2.0 carry, and Apache-2.0-notice.txt the
// boilerplate notice it tells projects to attach ("Licensed under the
// Apache License, Version 2.0 ..."), which many put after the licence's
// text without the appendix; they are known text but no licence: a file
// that is only the notice is not the licence's text.
//
//go:embed licences/*.txt
var referenceTexts embed.FS

const maxHole = 12

// maxUnknownWords is how many words outside the licence texts, copyright
// lines and titles a licence file may have (a project name, say). More
// means text we have not read, and it could add a condition.
const maxUnknownWords = 10

// conditionWords are words that a condition or a restriction can hardly do
// without ("Not for commercial use", "shall be used for Good, not Evil").
// Outside the licence texts, even one of them makes the file unknown.
var conditionWords = map[string]bool{"not": true, "no": true, "nor": true, "never": true, "must": true,
	"shall": true, "should": true, "may": true, "only": true, "except": true, "unless": true,
	"without": true, "provided": true, "prohibited": true, "forbidden": true, "restricted": true,
	"commercial": true, "noncommercial": true, "evil": true, "terms": true, "condition": true,
	"conditions": true, "license": true, "licensed": true, "licenses": true, "permission": true}

type reference struct {
	id      string
	licence bool
	re      *regexp.Regexp
}

var references = sync.OnceValue(func() []reference {
	entries, err := referenceTexts.ReadDir("licences")
	if err != nil {
		panic(err)
	}
	var refs []reference
	for _, e := range entries {
		b, err := referenceTexts.ReadFile(path.Join("licences", e.Name()))
		if err != nil {
			panic(err)
		}
		id := strings.TrimSuffix(e.Name(), ".txt")
		refs = append(refs, reference{id, slices.Contains(allowedLicences, id), referencePattern(string(b))})
	}
	return refs
})

var hole = regexp.MustCompile(`<<[^>]*>>`)

// referencePattern turns a reference text into a pattern over normalised
// words: the words in order, a hole matching up to maxHole words.
func referencePattern(text string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`\b`)
	first := true
	for i, piece := range hole.Split(text, -1) {
		if i > 0 {
			fmt.Fprintf(&b, `(?: [^ ]+){0,%d}`, maxHole)
		}
		for _, w := range normalise(piece) {
			if !first {
				b.WriteString(" ")
			}
			b.WriteString(regexp.QuoteMeta(w.text))
			first = false
		}
	}
	b.WriteString(`\b`)
	return regexp.MustCompile(b.String())
}

type word struct {
	text string
	line int // 0-based
}

// normalise reduces text to lowercase words of letters and digits, so that
// layout, punctuation, list markers and quote styles do not matter. Words of
// one character are dropped: they are list markers ("1.", "(a)", "*") or the
// "c" of "(c)". British and American spellings, and http and https, are
// made the same.
func normalise(text string) []word {
	var words []word
	for i, line := range strings.Split(text, "\n") {
		for _, w := range strings.FieldsFunc(strings.ToLower(line), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			if len([]rune(w)) < 2 {
				continue
			}
			switch w {
			case "licence":
				w = "license"
			case "licences":
				w = "licenses"
			case "https":
				w = "http"
			}
			words = append(words, word{w, i})
		}
	}
	return words
}

// classify says which allowed licences text is, or why it is not one: the
// whole text must be licence texts, copyright lines and titles, with at
// most maxUnknownWords words besides and none of them a conditionWord.
func classify(text string) (ids []string, why string) {
	words := normalise(text)
	var b strings.Builder
	starts := make([]int, len(words))
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		starts[i] = b.Len()
		b.WriteString(w.text)
	}
	joined := b.String()
	covered := make([]bool, len(words))
	for _, ref := range references() {
		for _, m := range ref.re.FindAllStringIndex(joined, -1) {
			for i, s := range starts {
				if s >= m[0] && s < m[1] {
					covered[i] = true
				}
			}
			if ref.licence && !slices.Contains(ids, ref.id) {
				ids = append(ids, ref.id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, "not the text of any allowed licence (" + strings.Join(allowedLicences, ", ") + ")"
	}
	lines := strings.Split(text, "\n")
	var unknown []string
	for i, w := range words {
		if !covered[i] && !isNotice(lines[w.line]) {
			unknown = append(unknown, w.text)
		}
	}
	conditional := slices.ContainsFunc(unknown, func(w string) bool { return conditionWords[w] })
	if len(unknown) > maxUnknownWords || conditional {
		if len(unknown) > 2*maxUnknownWords {
			unknown = append(unknown[:2*maxUnknownWords], "...")
		}
		return nil, fmt.Sprintf("%s text with %d words of other text: %q", strings.Join(ids, " and "), len(unknown), strings.Join(unknown, " "))
	}
	slices.Sort(ids)
	return ids, ""
}

var titleWords = map[string]bool{"the": true, "mit": true, "isc": true, "bsd": true, "clause": true,
	"new": true, "simplified": true, "revised": true, "modified": true, "license": true, "apache": true,
	"version": true, "mozilla": true, "public": true, "mpl": true, "spdx": true, "identifier": true,
	"or": true, "and": true, "expat": true, "unlicense": true}

// isNotice reports whether a line is a copyright line or a licence's title
// ("The MIT License (MIT)", "BSD 3-Clause License").
func isNotice(line string) bool {
	ws := normalise(line)
	joined := ""
	title := len(ws) > 0
	for _, w := range ws {
		joined += " " + w.text
		title = title && titleWords[w.text]
	}
	return strings.Contains(line, "©") || strings.Contains(joined, " copyright") ||
		strings.Contains(joined, " all rights reserved") || (title && strings.Contains(joined, " license"))
}
