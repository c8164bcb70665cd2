package policy

import (
	"strings"

	"boxmaker/wire"
)

// The TOML parser's decoded value carries no positions, so the loading rules
// that look at a decoded grant find their line by scanning the text. This is
// only to point the owner at the right line; a miss gives no line, never a
// wrong decision.

// keyLine is wire.GrantKeyLine: the line that assigns key or opens table key.
func keyLine(data []byte, key string) uint64 { return wire.GrantKeyLine(data, key) }

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
