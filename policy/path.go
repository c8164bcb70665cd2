package policy

import (
	"errors"
	"strings"
)

// MaxPathBytes is the longest valid path (M3a §3, "Paths").
const MaxPathBytes = 4096

// CheckPath says why p is not a valid absolute path, or returns nil. Paths are
// never normalised: a path that would need cleaning is refused, so what the
// owner wrote in a grant and what a call names compare byte for byte.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("is empty")
	case p[0] != '/':
		return errors.New("is not absolute")
	case len(p) > MaxPathBytes:
		return errors.New("is longer than 4096 bytes")
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("contains NUL")
	case p == "/":
		return nil
	}
	for rest := p[1:]; ; {
		comp, tail, more := strings.Cut(rest, "/")
		switch comp {
		case "":
			return errors.New("has an empty component (// or a trailing /)")
		case ".":
			return errors.New("has a . component")
		case "..":
			return errors.New("has a .. component")
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// ValidPath reports whether p is a valid absolute path.
func ValidPath(p string) bool { return CheckPath(p) == nil }

// PathInside reports whether p is dir itself or below it, by whole
// components: /a/notes2 is not inside /a/notes. Both must be valid paths;
// PathInside returns false if either is not.
func PathInside(dir, p string) bool {
	return ValidPath(dir) && ValidPath(p) && inside(dir, p)
}

// inside is PathInside for paths already checked.
func inside(dir, p string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}
