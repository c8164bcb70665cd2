package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// tailLine is one of the last lines of the log before the file startup
// verifies.
type tailLine struct {
	file    string
	b       []byte
	newline bool
	last    bool // the last line of its file
}

// lastLines returns up to n of the last lines of the named files (oldest
// first), reading each file backwards from its end, so that startup never
// reads the older files whole.
func lastLines(dir string, names []string, n int) ([]tailLine, error) {
	var out []tailLine
	for k := len(names) - 1; k >= 0 && len(out) < n; k-- {
		lines, err := fileTail(filepath.Join(dir, names[k]), n-len(out))
		if err != nil {
			return nil, err
		}
		out = append(lines, out...)
	}
	return out, nil
}

// fileTail returns up to n last lines of one file.
func fileTail(path string, n int) ([]tailLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	size, name := st.Size(), filepath.Base(path)
	for window := int64(64 << 10); ; window *= 4 {
		off := max(0, size-window)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return nil, fmt.Errorf("audit: %w", err)
		}
		lines := splitLines(name, buf)
		if off > 0 && len(lines) > 0 {
			lines = lines[1:] // it may start mid-line
		}
		if len(lines) >= n || off == 0 {
			return lines[max(0, len(lines)-n):], nil
		}
	}
}

// splitLines cuts buf, the end of a file, into lines.
func splitLines(name string, buf []byte) []tailLine {
	if len(buf) == 0 {
		return nil
	}
	parts := bytes.Split(buf, []byte{'\n'})
	newline := buf[len(buf)-1] == '\n'
	if newline {
		parts = parts[:len(parts)-1]
	}
	lines := make([]tailLine, len(parts))
	for i, p := range parts {
		lines[i] = tailLine{file: name, b: p, newline: newline || i < len(parts)-1, last: i == len(parts)-1}
	}
	return lines
}
