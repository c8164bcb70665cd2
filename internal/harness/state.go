package harness

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Files of a state fixture that are about it, not in it.
const (
	stateReadme = "README.md" // what wrote it and how
	// stateMtimes lists each file's modification time, "<ns> <path>" a
	// line, as the old run left it: git keeps none, and the notes' index
	// records its notes' (a stale index is rebuilt, so its format would
	// go untested).
	stateMtimes = "mtimes"
)

// copyState copies Options.State into the home, file for file and byte for
// byte, over what writeHome wrote (memory/core.md), and sets the times
// stateMtimes lists. Git keeps no modes but the executable bit, so each
// directory is made 0700 and each file 0600, as the roles make their own:
// the home is the owner's only. A link or anything else that is not a file
// or a directory is refused, so a fixture cannot point the roles outside
// the home.
func (h *Harness) copyState() error {
	if h.o.State == "" {
		return nil
	}
	err := filepath.WalkDir(h.o.State, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(h.o.State, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(h.Home, rel)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(dst, 0o700); err != nil {
				return err
			}
			return os.Chmod(dst, 0o700)
		case !d.Type().IsRegular():
			return fmt.Errorf("harness: the state %s holds %s, which is not a file", h.o.State, rel)
		case rel == stateReadme || rel == stateMtimes:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return err
		}
		return os.Chmod(dst, 0o600) // WriteFile keeps an existing file's mode
	})
	if err != nil {
		return err
	}
	return h.setStateTimes()
}

// setStateTimes sets the copied files' modification times from the
// fixture's stateMtimes, when it has one.
func (h *Harness) setStateTimes() error {
	b, err := os.ReadFile(filepath.Join(h.o.State, stateMtimes))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		ns, rel, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil || !filepath.IsLocal(rel) {
			return fmt.Errorf("harness: %s: a bad line %q", stateMtimes, line)
		}
		t := time.Unix(0, n)
		if err := os.Chtimes(filepath.Join(h.Home, rel), t, t); err != nil {
			return fmt.Errorf("harness: %s: %w", stateMtimes, err)
		}
	}
	return nil
}
