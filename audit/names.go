package audit

import (
	"os"
	"slices"
	"time"
)

const dayLayout = "2006-01-02"

// isLogName reports whether name is YYYY-MM-DD.jsonl for a real date. Other
// files in the directory (the lock, an editor's backup) are not the log.
func isLogName(name string) bool {
	const ext = ".jsonl"
	if len(name) != len(dayLayout)+len(ext) || name[len(dayLayout):] != ext {
		return false
	}
	t, err := time.Parse(dayLayout, name[:len(dayLayout)])
	return err == nil && t.Format(dayLayout) == name[:len(dayLayout)]
}

// logNames lists the log files in dir, oldest first. Names sort by date.
func logNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && isLogName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}
