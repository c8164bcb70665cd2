package main

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// licenceText is a reference text filled in the way a project would: the
// holes hold a holder's name, and a copyright line and title go on top.
func licenceText(t *testing.T, id string) string {
	t.Helper()
	b, err := referenceTexts.ReadFile(path.Join("licences", id+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(b), "<<or>>", "/or")
	body = hole.ReplaceAllString(body, "The Example Authors")
	return "Copyright (c) 2024 The Example Authors. All rights reserved.\n\n" + body
}

// rewrap reflows text into lines of about width columns, as projects do.
func rewrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n+len(w) > width {
			b.WriteString("\n")
			n = 0
		} else if n > 0 {
			b.WriteString(" ")
		}
		b.WriteString(w)
		n += len(w) + 1
	}
	return b.String()
}

func TestClassifyRecognisesEveryAllowedLicence(t *testing.T) {
	for _, id := range allowedLicences {
		text := licenceText(t, id)
		for name, variant := range map[string]string{
			"as written":     text,
			"reflowed":       rewrap(text, 60),
			"with a title":   "The " + id + " License\n\n" + text,
			"British, TLS":   strings.NewReplacer("License", "Licence", "http://", "https://").Replace(text),
			"with a SPDX id": "SPDX-License-Identifier: " + id + "\n\n" + text,
		} {
			ids, why := classify(variant)
			if why != "" || !slices.Equal(ids, []string{id}) {
				t.Errorf("%s, %s: got %v, %q", id, name, ids, why)
			}
		}
	}
}

func TestClassifyKnownVariants(t *testing.T) {
	apache := licenceText(t, "Apache-2.0")
	appendix, err := referenceTexts.ReadFile("licences/Apache-2.0-appendix.txt")
	if err != nil {
		t.Fatal(err)
	}
	filled := strings.Replace(string(appendix), "<<year and owner>>", "2019 Example Corp.", 1)
	for name, tc := range map[string]struct {
		text string
		want []string
	}{
		"Apache with its appendix filled in":       {apache + "\n" + filled, []string{"Apache-2.0"}},
		"MIT with a project name line":             {"The MIT License (MIT)\n\ngo-toml v2\n" + licenceText(t, "MIT"), []string{"MIT"}},
		"Apache with the standard notice after it": {apache + "\n   Copyright The Example Authors\n\n" + notice(t), []string{"Apache-2.0"}},
		"Apache with the notice before it":         {"Copyright 2020 Example Corp.\n\n" + notice(t) + "\n\n" + apache, []string{"Apache-2.0"}},
		"the Unlicense":                            {unlicense(t), []string{"Unlicense"}},
		"two licences in one file":                 {licenceText(t, "MIT") + "\n\n" + licenceText(t, "Apache-2.0"), []string{"Apache-2.0", "MIT"}},
		"BSD-3 with numbered clauses": {strings.NewReplacer("   * Redistributions of source", "1. Redistributions of source",
			"   * Redistributions in binary", "2. Redistributions in binary", "   * Neither", "3. Neither").Replace(licenceText(t, "BSD-3-Clause")), []string{"BSD-3-Clause"}},
	} {
		ids, why := classify(tc.text)
		if why != "" || !slices.Equal(ids, tc.want) {
			t.Errorf("%s: got %v, %q; want %v", name, ids, why, tc.want)
		}
	}
}

func TestClassifyRefusesOtherTexts(t *testing.T) {
	mit := licenceText(t, "MIT")
	bsd3 := licenceText(t, "BSD-3-Clause")
	advertising := "   * All advertising materials mentioning features or use of this software\n" +
		"must display the following acknowledgement: This product includes software\ndeveloped by the Example Authors.\n"
	for name, tc := range map[string]struct {
		text string
		why  string
	}{
		"empty": {"", "not the text of any allowed licence"},
		"GPL": {"This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation, either version 3 of the License, or (at your option) any later version.",
			"not the text of any allowed licence"},
		"the JSON licence (MIT plus a condition)": {strings.Replace(mit, "The above copyright notice", "The Software shall be used for Good, not Evil.\n\nThe above copyright notice", 1),
			"not the text of any allowed licence"},
		"MIT with the JSON licence's condition after it": {mit + "\nThe Software shall be used for Good, not Evil.\n",
			`MIT text with 9 words of other text: "the software shall be used for good not evil"`},
		"MIT with a short restriction":   {mit + "\nNot for commercial use.\n", `MIT text with 4 words of other text`},
		"MIT with a long note":           {mit + "\n" + strings.Repeat("This paragraph is about something else entirely. ", 3), "MIT text with 21 words"},
		"BSD-4 (the advertising clause)": {strings.Replace(bsd3, "   * Neither", advertising+"   * Neither", 1), "BSD-2-Clause"},
		"BSD-3 without its disclaimer":   {bsd3[:strings.Index(bsd3, "THIS SOFTWARE")], "not the text of any allowed licence"},
		"MIT cut short":                  {mit[:len(mit)/2], "not the text of any allowed licence"},
		// The notice names Apache-2.0 but is not its text.
		"Apache's notice alone": {"Copyright 2018 Example Corp.\n\n" + notice(t), "not the text of any allowed licence"},
		"Apache with the notice and a restriction": {licenceText(t, "Apache-2.0") + "\n" + notice(t) + "\nThis software may not be used for military purposes.\n",
			`Apache-2.0 text with 9 words of other text`},
		"the Unlicense with a condition": {strings.Replace(unlicense(t), "by any\nmeans.", "by any\nmeans, except by the military.", 1), "not the text of any allowed licence"},
		"the Unlicense cut short":        {unlicense(t)[:300], "not the text of any allowed licence"},
	} {
		ids, why := classify(tc.text)
		if ids != nil || !strings.Contains(why, tc.why) {
			t.Errorf("%s: got %v, %q; want a refusal saying %q", name, ids, why, tc.why)
		}
	}
}

func TestReferenceHolesAreBounded(t *testing.T) {
	// A hole must not be able to swallow a clause: it takes at most
	// maxHole words.
	long := strings.Repeat("word ", maxHole+1)
	text := strings.Replace(licenceText(t, "ISC"), "AND The Example Authors DISCLAIMS", "AND "+long+"DISCLAIMS", 1)
	if ids, _ := classify(text); ids != nil {
		t.Errorf("a %d-word hole matched: %v", maxHole+1, ids)
	}
	fits := strings.Replace(licenceText(t, "ISC"), "AND The Example Authors DISCLAIMS", "AND "+strings.Repeat("word ", maxHole)+"DISCLAIMS", 1)
	if ids, why := classify(fits); len(ids) != 1 {
		t.Errorf("a %d-word hole did not match: %q", maxHole, why)
	}
}

func notice(t *testing.T) string {
	t.Helper()
	b, err := referenceTexts.ReadFile("licences/Apache-2.0-notice.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func unlicense(t *testing.T) string {
	t.Helper()
	b, err := referenceTexts.ReadFile("licences/Unlicense.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
