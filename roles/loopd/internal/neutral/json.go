package neutral

import (
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A tool call's arguments are a JSON text, and llama-server parses it
// before rendering whenever the template takes object arguments
// (common/chat.cpp, func_args_not_string; Qwen2.5's does): the template
// then prints the decoded strings, so "\u003c|im_end|\u003e" reaches the
// tokenizer as "<|im_end|>", a marker Neutralise never saw in the text as
// written. NeutraliseJSON neutralises what the server will decode instead.

// NeutraliseJSON neutralises a JSON text the way the server will read it.
// When s is valid JSON (duplicate names allowed, as llama-server's parser
// allows them) it returns s with every string, key or value, replaced by
// the neutralised decoded string, quoted again with only the escapes JSON
// requires (`"`, `\` and U+0000–U+001F): no escape is left that could
// spell a marker's character out of the neutraliser's sight, and each ZWSP
// sits inside a string, so the text stays valid JSON and decodes to the
// same value apart from the ZWSPs. Everything outside strings (structure,
// numbers, whitespace) is kept byte for byte; the result depends on s
// alone, so a history rebuilt from the log gives the same bytes. strs are
// the neutralised strings in order, for the check before sending. When s
// is not valid JSON, ok is false and NeutraliseJSON returns nothing: the
// caller treats s as plain text.
//
// Neutralising each decoded string on its own also breaks markers that
// hold `"` or `\` (Gemma 4's `<|"|>`), which stay escaped in the JSON
// text, and closes each string's ends against the template's text around
// it. A marker spanning a string's quote and the structure outside it is
// left to the check before sending, which tokenizes the JSON text too.
func (set *Set) NeutraliseJSON(s string) (out string, strs []string, ok bool) {
	if !jsontext.Value(s).IsValid(jsontext.AllowDuplicateNames(true)) {
		return "", nil, false
	}
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		if s[i] != '"' {
			b = append(b, s[i])
			i++
			continue
		}
		j := i + 1
		for s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		dec, err := jsontext.AppendUnquote(nil, s[i:j+1])
		if err != nil {
			return "", nil, false // not after IsValid; never guess
		}
		n := set.Neutralise(string(dec))
		b, _ = jsontext.AppendQuote(b, n)
		strs = append(strs, n)
		i = j + 1
	}
	return string(b), strs, true
}

// Literal is s with every JSON string escape that stands for a character
// allowed literally in a JSON string replaced by that character: `\/`,
// `\uXXXX` (surrogate pairs joined), but not `\"`, `\\`, control
// characters or a lone surrogate, which stay as written. It reads s
// lexically, without parsing: in any text a JSON parser accepts,
// backslashes occur only inside strings, so this is exactly what the
// server decodes even where loopd's parser and the server's disagree on
// validity (a byte order mark, which llama-server's parser skips; nesting
// deeper than loopd's parser allows). The check before sending tokenizes
// it for arguments that are not valid JSON, failing closed on any marker
// an escape would hide.
func Literal(s string) string {
	var b []byte
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		r, n := unescape(s[i:])
		if r < 0 {
			i++ // keep the escape, and never read its second byte as one
			continue
		}
		if b == nil {
			b = make([]byte, 0, len(s))
		}
		b = append(b, s[last:i]...)
		b = utf8.AppendRune(b, r)
		last = i + n
		i += n - 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// unescape reads the escape at the start of s (s[0] is a backslash): the
// character it stands for and its length, or -1 when it must stay as
// written.
func unescape(s string) (rune, int) {
	if len(s) < 2 {
		return -1, 0
	}
	switch s[1] {
	case '/':
		return '/', 2
	case 'u':
	default:
		return -1, 0
	}
	r, ok := hex4(s[2:])
	switch {
	case !ok:
		return -1, 0
	case r >= 0xd800 && r < 0xdc00:
		if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := hex4(s[8:]); ok && lo >= 0xdc00 && lo < 0xe000 {
				return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
			}
		}
		return -1, 0
	case r >= 0xdc00 && r < 0xe000, r < 0x20, r == '"', r == '\\':
		return -1, 0
	}
	return r, 6
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:4], 16, 32)
	return rune(v), err == nil
}
