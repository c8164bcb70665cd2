package inert

import (
	"strings"
	"unicode"
)

// acts reports whether a word's text could be read as a URL, a mention, an
// email address, a channel link, a hashtag, LaTeX, HTML, an angle autolink
// or an entity by Mattermost's server or any of its clients. It errs
// towards yes: a word it passes stays prose.
func acts(t string) bool {
	if strings.ContainsAny(t, "@$<") || strings.Contains(t, "//") {
		return true
	}
	rs := []rune(t)
	for i, r := range rs {
		if i+1 == len(rs) {
			break
		}
		next := rs[i+1]
		switch {
		case r == '#' && next != '#', r == '~' && next != '~':
			return true
		case r == '&' && (next == '#' || next < unicode.MaxASCII && (unicode.IsLetter(next) || unicode.IsDigit(next))):
			return true // an entity: &#64; is an @ to the server
		case r == ':' && schemeBefore(rs[:i]) && (strings.ContainsRune("/\\%", next) || unicode.IsLetter(next) || unicode.IsNumber(next)):
			return true
		case r == '.' && i+2 < len(rs) && unicode.IsLetter(next) && unicode.IsLetter(rs[i+2]):
			return true
		case (r == 'w' || r == 'W') && www(rs[i:]):
			return true
		}
	}
	return false
}

// schemeBefore reports whether the characters that can make up a URL scheme
// ([A-Za-z0-9+.-]) right before a colon include a letter: a scheme starts
// with one.
func schemeBefore(rs []rune) bool {
	for j := len(rs) - 1; j >= 0; j-- {
		r := rs[j]
		switch {
		case 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
			return true
		case '0' <= r && r <= '9' || r == '+' || r == '.' || r == '-':
		default:
			return false
		}
	}
	return false
}

// www reports whether rs starts with www, up to three digits and a dot, the
// prefix Mattermost autolinks without a scheme.
func www(rs []rune) bool {
	if len(rs) < 4 || strings.ToLower(string(rs[:3])) != "www" {
		return false
	}
	for i := 3; i < len(rs) && i <= 6; i++ {
		if rs[i] == '.' {
			return true
		}
		if rs[i] < '0' || rs[i] > '9' {
			return false
		}
	}
	return false
}
