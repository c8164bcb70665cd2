package inert

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"boxmaker/wire"
)

// Answer is what an owner's reaction or reply on an approval post says.
type Answer int

const (
	NoAnswer Answer = iota
	Approve
	Refuse
)

func (a Answer) String() string {
	switch a {
	case Approve:
		return "approve"
	case Refuse:
		return "refuse"
	}
	return "no answer"
}

// Wire is the answer as owner_answer carries it; ok is false for NoAnswer.
func (a Answer) Wire() (answer wire.ApprovalAnswer, ok bool) {
	switch a {
	case Approve:
		return wire.Approved, true
	case Refuse:
		return wire.Refused, true
	}
	return 0, false
}

// MaxReasonBytes caps a refusal's reason from a reply.
const MaxReasonBytes = 500

// reactions are the emoji names that answer, as Mattermost sends them in
// reaction_added (thumbsup and thumbsdown are the other names of +1 and -1).
var reactions = map[string]Answer{
	"+1": Approve, "thumbsup": Approve, "white_check_mark": Approve,
	"-1": Refuse, "thumbsdown": Refuse, "x": Refuse,
}

// skinTones are the suffixes Mattermost gives 👍 and 👎 when the person
// reacting has chosen a skin tone: their reaction is the same answer.
var skinTones = []string{"_light_skin_tone", "_medium_light_skin_tone", "_medium_skin_tone",
	"_medium_dark_skin_tone", "_dark_skin_tone"}

// ReactionAnswer reads a reaction's emoji name: +1, thumbsup and
// white_check_mark approve; -1, thumbsdown and x refuse; the thumbs in any
// skin tone count as the thumbs; anything else is NoAnswer.
func ReactionAnswer(emoji string) Answer {
	if a, ok := reactions[emoji]; ok {
		return a
	}
	for _, tone := range skinTones {
		// (_light_skin_tone is also the end of _medium_light_skin_tone.)
		base, ok := strings.CutSuffix(emoji, tone)
		if ok && (base == "+1" || base == "thumbsup" || base == "-1" || base == "thumbsdown") {
			return reactions[base]
		}
	}
	return NoAnswer
}

// ReplyAnswer reads a reply in an approval post's thread. "approve" (in any
// ASCII case, with spaces around it and an optional "." or "!" after it)
// approves. "refuse" alone (the same way) refuses; "refuse" followed by
// whitespace, or by ".", "!", ":" or "," and then whitespace, and a reason,
// refuses with that reason: trimmed, made valid UTF-8, cut to at most
// MaxReasonBytes at a character boundary, and kept as text. Anything else is
// NoAnswer: "approve 3", "approve please", "I approve", "/approve".
func ReplyAnswer(message string) (a Answer, reason string) {
	m := strings.TrimSpace(message)
	first, rest := m, ""
	if i := strings.IndexFunc(m, unicode.IsSpace); i >= 0 {
		first, rest = m[:i], strings.TrimSpace(m[i:])
	}
	w := asciiLower(first)
	bare := strings.TrimRight(w, ".!")
	switch {
	case rest == "" && len(w)-len(bare) <= 1 && bare == "approve":
		return Approve, ""
	case rest == "" && len(w)-len(bare) <= 1 && bare == "refuse":
		return Refuse, ""
	case rest != "" && (w == "refuse" || len(w) == len("refuse")+1 && w[:6] == "refuse" && strings.ContainsRune(".!:,", rune(w[6]))):
		return Refuse, cutBytes(strings.ToValidUTF8(rest, "\uFFFD"), MaxReasonBytes)
	}
	return NoAnswer, ""
}

// asciiLower lowers ASCII letters only: Unicode case folding would let
// look-alikes (ſ folds to s) spell a command.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// cutBytes cuts valid UTF-8 s to at most n bytes at a character boundary
// and trims the space the cut may leave.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.TrimSpace(s[:i])
}
