package jobs

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

// FuzzEvery: every's parser never panics; an interval it accepts is whole
// seconds from MinEvery to MaxEvery, its String reads back as the same
// interval, and from any instant Next is the next multiple of it since the
// epoch, not due again once stored to the millisecond and read back.
func FuzzEvery(f *testing.F) {
	for _, s := range []string{"15m", "6h", "1h30m", "1m0.5s", "90.5s", "59s", "8785h", "1.5h", "-1h", "+1h", "1h1h",
		"60000000000ns", "1e3s", "", "0", ".5m", "1m0.0005s", "9223372036854775807ns"} {
		f.Add(s, int64(1774742400))
	}
	f.Fuzz(func(t *testing.T, s string, at int64) {
		sch, err := ParseEvery(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "every ") || sch != nil {
				t.Fatalf("%q: %v %v", s, sch, err)
			}
			return
		}
		d := time.Duration(sch.(every))
		if d%time.Second != 0 || d < MinEvery || d > MaxEvery {
			t.Fatalf("%q accepted as %s", s, d)
		}
		again, err := ParseEvery(strings.TrimPrefix(sch.String(), "every "))
		if err != nil || again != sch {
			t.Fatalf("%q: String %q reads back as %v, %v", s, sch.String(), again, err)
		}
		const span = 230 * 365 * 24 * 3600
		after := time.Unix((at%span+span)%span, int64(uint64(at)%1e9))
		next := sch.Next(after)
		if !next.After(after) || next.Sub(after) > d || next.Unix()%int64(d/time.Second) != 0 || next.Nanosecond() != 0 {
			t.Fatalf("%q: Next(%s) = %s", s, after, next)
		}
		if back := wire.TimestampOf(next).Time(); !sch.Next(back).After(next) {
			t.Fatalf("%q: due %s, stored as %s, is due again", s, next, back)
		}
	})
}

// FuzzLoad: a jobs directory of fuzzed files (names and bytes) loads as
// every job and no problem, or as problems and no job; jobs are sorted,
// one per name, each what parseJob makes of its file; problems are
// sorted by file and line and name files of the directory.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("morning.toml\x00" + validJob + "\x00sweep.toml\x00every = \"6h\"\nprompt = \"p\"\nresult = \"note\"\n"))
	f.Add([]byte("a.toml\x00" + validJob + "\x00Bad.toml\x00x\x00README\x00y"))
	f.Add([]byte("never.toml\x00schedule = \"30 2 25-31 3 */7\"\nprompt = \"p\"\nresult = \"post\"\n"))
	f.Add([]byte("frac.toml\x00every = \"1m0.5s\"\nprompt = \"p\"\nresult = \"post\"\n\x00x.toml\x00\xff"))
	berlin := mustZone(f, "Europe/Berlin")
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		parts := bytes.Split(data, []byte{0})
		files := map[string][]byte{}
		for i := 0; i+1 < len(parts) && len(files) < 8; i += 2 {
			name := string(parts[i])
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/") || len(name) > 100 {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), parts[i+1], 0o644); err != nil {
				t.Skip(err) // a name this filesystem refuses
			}
			files[name] = parts[i+1]
		}
		js, ps, err := LoadIn(dir, berlin)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if len(js) > 0 && len(ps) > 0 {
			t.Fatalf("jobs and problems: %v %v", js, ps)
		}
		for _, p := range ps {
			if filepath.Dir(p.File) != dir || p.Problem == "" || p.Line < 0 {
				t.Fatalf("problem %+v", p)
			}
		}
		if !slices.IsSortedFunc(ps, func(a, b Problem) int {
			if c := strings.Compare(a.File, b.File); c != 0 {
				return c
			}
			return a.Line - b.Line
		}) {
			t.Fatalf("problems out of order: %v", ps)
		}
		want := 0
		for name, body := range files {
			stem, ok := strings.CutSuffix(name, jobExt)
			if !ok {
				continue
			}
			want++
			if len(ps) > 0 {
				continue
			}
			i := slices.IndexFunc(js, func(j Job) bool { return j.Name == stem })
			if i < 0 {
				t.Fatalf("%s: no job and no problem", name)
			}
			j, jps := parseJob(filepath.Join(dir, name), stem, body, berlin)
			if len(jps) > 0 || j.Sha256 != js[i].Sha256 || j.Prompt != js[i].Prompt || j.Schedule.String() != js[i].Schedule.String() {
				t.Fatalf("%s: loaded %+v, parsed alone %+v %v", name, js[i], j, jps)
			}
		}
		if len(ps) == 0 && len(js) != want {
			t.Fatalf("%d jobs from %d job files", len(js), want)
		}
		if !slices.IsSortedFunc(js, func(a, b Job) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatalf("jobs out of order")
		}
	})
}
