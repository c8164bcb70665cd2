package policy

import "strings"

// The TOML parser's decoded value carries no positions, so the loading rules
// that look at a decoded grant find their line by scanning the text. This is
// only to point the owner at the right line; a miss gives no line, never a
// wrong decision.

// keyLine is the 1-based line that assigns key (bare, quoted, or dotted
// under constraints) or opens a table named key; 0 if none does.
func keyLine(data []byte, key string) uint64 {
	if data == nil {
		return 0
	}
	forms := []string{key, `"` + key + `"`, "'" + key + "'", "constraints." + key}
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimPrefix(strings.TrimSpace(line), "[")
		for _, form := range forms {
			rest, ok := strings.CutPrefix(t, form)
			if !ok {
				continue
			}
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "]") {
				return uint64(i + 1)
			}
		}
	}
	return 0
}

// itemLine is the first line, from key's line on, that holds item as a
// quoted string; key's line if none does (an item written with escapes).
func itemLine(data []byte, key, item string) uint64 {
	start := keyLine(data, key)
	if start == 0 {
		return 0
	}
	lines := strings.Split(string(data), "\n")
	for i := int(start) - 1; i < len(lines); i++ {
		if strings.Contains(lines[i], `"`+item+`"`) || strings.Contains(lines[i], "'"+item+"'") {
			return uint64(i + 1)
		}
	}
	return start
}
