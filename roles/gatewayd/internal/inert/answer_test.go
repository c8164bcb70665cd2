package inert

import (
	"strings"
	"testing"
	"unicode/utf8"

	"boxmaker/wire"
)

func TestReactionAnswer(t *testing.T) {
	for emoji, want := range map[string]Answer{
		"+1": Approve, "thumbsup": Approve, "white_check_mark": Approve,
		"+1_medium_skin_tone": Approve, "thumbsup_dark_skin_tone": Approve, "+1_light_skin_tone": Approve,
		"-1": Refuse, "thumbsdown": Refuse, "x": Refuse, "-1_medium_dark_skin_tone": Refuse,
		"thumbsdown_medium_light_skin_tone": Refuse,
		"":                                  NoAnswer, "heavy_check_mark": NoAnswer, "ballot_box_with_check": NoAnswer,
		"+2": NoAnswer, "+1_tone9": NoAnswer, "x_light_skin_tone": NoAnswer, "white_check_mark_dark_skin_tone": NoAnswer,
		"negative_squared_cross_mark": NoAnswer, "heart": NoAnswer, "smile": NoAnswer, "X": NoAnswer, "+1 ": NoAnswer,
		"_light_skin_tone": NoAnswer, "thumbsup_": NoAnswer, "👍": NoAnswer,
	} {
		if got := ReactionAnswer(emoji); got != want {
			t.Errorf("ReactionAnswer(%q) = %v, want %v", emoji, got, want)
		}
	}
}

func TestReplyAnswer(t *testing.T) {
	cases := []struct {
		in     string
		want   Answer
		reason string
	}{
		{"approve", Approve, ""},
		{"Approve", Approve, ""},
		{"APPROVE", Approve, ""},
		{"  approve \n", Approve, ""},
		{"\u00a0approve\t", Approve, ""},
		{"approve.", Approve, ""},
		{"approve!", Approve, ""},
		{"approve!!", NoAnswer, ""},
		{"approve.!", NoAnswer, ""},
		{"approve 3", NoAnswer, ""},
		{"approve please", NoAnswer, ""},
		{"approve\n3", NoAnswer, ""},
		{"I approve", NoAnswer, ""},
		{"/approve", NoAnswer, ""},
		{"approved", NoAnswer, ""},
		{"approve?", NoAnswer, ""},
		{"**approve**", NoAnswer, ""},
		{"`approve`", NoAnswer, ""},
		{"approve\u200b", NoAnswer, ""},
		{"appro\u200bve", NoAnswer, ""},
		{"аpprove", NoAnswer, ""}, // a Cyrillic а
		{"ok", NoAnswer, ""},
		{"yes", NoAnswer, ""},
		{"", NoAnswer, ""},
		{"refuse", Refuse, ""},
		{"Refuse.", Refuse, ""},
		{"REFUSE!", Refuse, ""},
		{"refuse too risky", Refuse, "too risky"},
		{"refuse   not on a Sunday  ", Refuse, "not on a Sunday"},
		{"refuse\nline one\nline two", Refuse, "line one\nline two"},
		{"Refuse: not now", Refuse, "not now"},
		{"refuse, no", Refuse, "no"},
		{"refuse. no", Refuse, "no"},
		{"refuse @channel ![x](https://a)", Refuse, "@channel ![x](https://a)"},
		{"refused", NoAnswer, ""},
		{"refuse:", NoAnswer, ""},
		{"refusenow", NoAnswer, ""},
		{"/refuse no", NoAnswer, ""},
		{"I refuse", NoAnswer, ""},
		{"refuſe", NoAnswer, ""}, // a long s folds to s in Unicode
		{"refuse " + strings.Repeat("é", 300), Refuse, strings.Repeat("é", 250)},
		{"refuse " + strings.Repeat("a", 499) + "é", Refuse, strings.Repeat("a", 499)},
		{"refuse " + strings.Repeat("a", 600), Refuse, strings.Repeat("a", 500)},
		{"refuse a\xffb", Refuse, "a\uFFFDb"},
	}
	for _, c := range cases {
		a, reason := ReplyAnswer(c.in)
		if a != c.want || reason != c.reason {
			t.Errorf("ReplyAnswer(%q) = %v, %q; want %v, %q", c.in, a, reason, c.want, c.reason)
		}
	}
}

func TestAnswerWire(t *testing.T) {
	if a, ok := Approve.Wire(); !ok || a != wire.Approved {
		t.Errorf("Approve.Wire() = %v, %v", a, ok)
	}
	if a, ok := Refuse.Wire(); !ok || a != wire.Refused {
		t.Errorf("Refuse.Wire() = %v, %v", a, ok)
	}
	if _, ok := NoAnswer.Wire(); ok {
		t.Errorf("NoAnswer.Wire() is an answer")
	}
}

// FuzzReplyAnswer: a reply approves only when it is the word itself, and a
// refusal's reason is short, valid UTF-8 and trimmed.
func FuzzReplyAnswer(f *testing.F) {
	for _, s := range []string{"approve", " Approve! ", "refuse not now", "refuse", "approve 3", "refuse\xff", "refuse:\tx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, reason := ReplyAnswer(s)
		w := strings.ToLower(strings.TrimSpace(s))
		switch a {
		case Approve:
			if w != "approve" && w != "approve." && w != "approve!" {
				t.Fatalf("ReplyAnswer(%q) approves", s)
			}
		case Refuse:
			if !strings.HasPrefix(w, "refuse") {
				t.Fatalf("ReplyAnswer(%q) refuses", s)
			}
		case NoAnswer:
			if w == "approve" || w == "refuse" {
				t.Fatalf("ReplyAnswer(%q) is no answer", s)
			}
		}
		if len(reason) > MaxReasonBytes || !utf8.ValidString(reason) || reason != strings.TrimSpace(reason) || (a != Refuse && reason != "") {
			t.Fatalf("ReplyAnswer(%q) reason %q", s, reason)
		}
	})
}
