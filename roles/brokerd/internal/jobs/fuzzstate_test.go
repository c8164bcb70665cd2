package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzJobsStateFile: whatever bytes are at jobs.json, readState never panics
// and either accepts them or calls them damage (issue 29, class 1: damage
// is set aside, any other error stops the start, so a decode failure must
// never look like a read error). What it accepts, written back as brokerd
// writes it, reads back the same.
func FuzzJobsStateFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"jobs":[]}`))
	f.Add([]byte(`{"version":1,"jobs":[{"name":"a","checked":"2026-03-02T10:15:00.000Z","last":null}]}`))
	f.Add([]byte(`{"version":1,"jobs":[{"name":"a","checked":"2026-03-02T10:15:00.000Z","last":{"due":"2026-03-02T10:15:00.000Z","started":"2026-03-02T10:15:00.000Z","ended":null,"trigger":"manual","outcome":"running"}}]}`))
	f.Add([]byte(`{"version":2,"jobs":[]}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "jobs.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		recs, err := readState(path)
		if err != nil {
			if !errors.Is(err, errDamaged) {
				t.Fatalf("%q: %v is not damage", data, err)
			}
			return
		}
		again := filepath.Join(dir, "again.json")
		if err := writeState(again, recs); err != nil {
			t.Fatal(err)
		}
		back, err := readState(again)
		if err != nil || len(back) != len(recs) {
			t.Fatalf("%q: written back, it reads as %v, %v", data, back, err)
		}
		for name, r := range recs {
			b := back[name]
			if b == nil || b.Checked != r.Checked || (b.Last == nil) != (r.Last == nil) ||
				b.Last != nil && (*b.Last).Outcome != r.Last.Outcome {
				t.Fatalf("%q: %s reads back as %+v, was %+v", data, name, b, r)
			}
		}
	})
}
