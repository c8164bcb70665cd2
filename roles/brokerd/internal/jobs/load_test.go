package jobs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/wire"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const validJob = `schedule = "0 7 * * 1-5"
prompt = "Summarise my unread mail."
result = "post"
`

func TestLoadValid(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"morning.toml": validJob,
		"sweep.toml": `every = "6h"
prompt = """
Look at the backups.
Write what failed."""
result = "both"
unattended_ask = "deny"
catch_up = true
`,
		"README":          "not a job",
		"morning.toml~":   "an editor's backup",
		"notes.toml.orig": "x",
	})
	jobs, ps, err := LoadIn(dir, time.UTC)
	if err != nil || len(ps) > 0 {
		t.Fatalf("Load: %v %v", ps, err)
	}
	if len(jobs) != 2 || jobs[0].Name != "morning" || jobs[1].Name != "sweep" {
		t.Fatalf("jobs %+v", jobs)
	}
	m, s := jobs[0], jobs[1]
	if m.Schedule.String() != "0 7 * * 1-5" || m.Prompt != "Summarise my unread mail." || m.Result != ResultPost ||
		m.DenyAsks || m.CatchUp || m.Sha256 != wire.Sha256([]byte(validJob)) {
		t.Errorf("morning: %+v", m)
	}
	if s.Schedule.String() != "every 6h" || s.Prompt != "Look at the backups.\nWrite what failed." || s.Result != ResultBoth ||
		!s.DenyAsks || !s.CatchUp {
		t.Errorf("sweep: %+v", s)
	}
	if !s.Result.Post() || !s.Result.Note() || !ResultPost.Post() || ResultPost.Note() || ResultNote.Post() || !ResultNote.Note() {
		t.Error("Result's Post and Note")
	}
	if ResultPost.String() != "post" || ResultNote.String() != "note" || ResultBoth.String() != "both" {
		t.Error("Result's String")
	}
	// The cron line is read in the zone given.
	berlin := mustZone(t, "Europe/Berlin")
	jobs, _, _ = LoadIn(dir, berlin)
	if got := jobs[0].Schedule.Next(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("07:00 Berlin is %s", got)
	}
}

func TestLoadMissingAndUnreadable(t *testing.T) {
	jobs, ps, err := Load(filepath.Join(t.TempDir(), "nope"))
	if jobs != nil || ps != nil || err != nil {
		t.Errorf("a missing dir: %v %v %v", jobs, ps, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a dir that is a file: %v", err)
	}
}

// TestLoadProblems: each file's problems, with file and line, sorted, and
// no job at all when any file has one.
func TestLoadProblems(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string // "line: text" (0: no line)
	}{
		{"unknown key", validJob + "retries = 3\n", []string{`4: unknown key "retries"`}},
		{"key in another case", "Schedule = \"* * * * *\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: unknown key "Schedule"`}},
		{"duplicate key", validJob + "result = \"note\"\n", []string{`4: key result is already defined`}},
		{"a table", validJob + "[extra]\n", []string{`4: unknown key "extra"`}},
		{"schedule not a string", "schedule = 5\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: "schedule" must be a string`}},
		{"catch_up not a bool", validJob + "catch_up = \"yes\"\n", []string{`4: "catch_up" must be true or false`}},
		{"bad cron", "schedule = \"0 25 * * *\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: schedule: hour "25": 25 is out of range 0-23`}},
		{"cron with names", "prompt = \"p\"\nschedule = \"0 7 * * MON\"\nresult = \"post\"\n", []string{`2: schedule: day of week "MON": "MON" is not a number`}},
		{"both schedule and every", "schedule = \"0 7 * * *\"\nevery = \"1h\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`2: both schedule and every`}},
		{"neither", "prompt = \"p\"\nresult = \"post\"\n", []string{`0: neither schedule nor every`}},
		{"every 30s", "every = \"30s\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: every "30s" is shorter than 1m0s`}},
		{"every not a duration", "every = \"daily\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: every "daily" is not a duration`}},
		{"every negative", "every = \"-1h\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: every "-1h" is shorter than 1m0s`}},
		{"every too long", "every = \"9000h\"\nprompt = \"p\"\nresult = \"post\"\n", []string{`1: every "9000h" is longer than 8784h0m0s`}},
		{"prompt missing", "every = \"1h\"\nresult = \"post\"\n", []string{`0: prompt is missing`}},
		{"prompt empty", "every = \"1h\"\nprompt = \" \\n \"\nresult = \"post\"\n", []string{`2: prompt is empty`}},
		{"prompt too long", "every = \"1h\"\nprompt = \"" + strings.Repeat("a", MaxPromptBytes+1) + "\"\nresult = \"post\"\n", []string{`2: prompt is 16385 bytes, more than 16384`}},
		{"result missing", "every = \"1h\"\nprompt = \"p\"\n", []string{`0: result is missing`}},
		{"bad result", "every = \"1h\"\nprompt = \"p\"\nresult = \"mail\"\n", []string{`3: result "mail" is not "post", "note" or "both"`}},
		{"result in capitals", "every = \"1h\"\nprompt = \"p\"\nresult = \"Post\"\n", []string{`3: result "Post" is not`}},
		{"bad unattended_ask", validJob + "unattended_ask = \"allow\"\n", []string{`4: unattended_ask "allow" is not "ask" or "deny"`}},
		{"several problems, by line", "result = \"x\"\nevery = \"1s\"\n", []string{`0: prompt is missing`, `1: result "x"`, `2: every "1s"`}},
		{"not TOML", "schedule = \n", []string{`1: unexpected character`}},
		{"not UTF-8", "prompt = \"\xff\"\n", []string{`1: the file is not valid UTF-8`}},
	} {
		dir := writeFiles(t, map[string]string{"good.toml": validJob, "job.toml": tc.body})
		jobs, ps, err := LoadIn(dir, time.UTC)
		if err != nil || jobs != nil {
			t.Errorf("%s: jobs %v err %v", tc.name, jobs, err)
		}
		if len(ps) != len(tc.want) {
			t.Errorf("%s: problems %v, want %v", tc.name, ps, tc.want)
			continue
		}
		for i, p := range ps {
			if p.File != filepath.Join(dir, "job.toml") {
				t.Errorf("%s: file %q", tc.name, p.File)
			}
			line, text, _ := strings.Cut(tc.want[i], ": ")
			if got := strings.TrimSpace(strings.SplitN(p.Problem, "\n", 2)[0]); itoa(p.Line) != line || !strings.HasPrefix(got, text) {
				t.Errorf("%s: problem %d is %d: %q, want %s: %q", tc.name, i, p.Line, got, line, text)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestLoadFiles: bad names and files that are not regular, with every
// problem of the directory sorted by file.
func TestLoadFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"Morning.toml": validJob, "b_c.toml": validJob, ".hidden.toml": validJob, "ok.toml": validJob,
		"zz.toml": "prompt = 1\n", ".toml": validJob,
	})
	if err := os.Mkdir(filepath.Join(dir, "dir.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), make([]byte, MaxJobFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, ps, err := LoadIn(dir, time.UTC)
	if err != nil || jobs != nil {
		t.Fatalf("jobs %v err %v", jobs, err)
	}
	want := []struct{ file, text string }{
		{".hidden.toml", `".hidden" is not a job name`},
		{".toml", `"" is not a job name`},
		{"Morning.toml", `"Morning" is not a job name`},
		{"b_c.toml", `"b_c" is not a job name`},
		{"big.toml", "is larger than 1048576 bytes"},
		{"dir.toml", "is not a regular file"},
		{"fifo.toml", "is not a regular file"},
		{"zz.toml", `"prompt" must be a string`},
	}
	if len(ps) != len(want) {
		t.Fatalf("problems %v", ps)
	}
	for i, w := range want {
		if ps[i].File != filepath.Join(dir, w.file) || !strings.Contains(ps[i].Problem, w.text) {
			t.Errorf("problem %d: %s, want %s: %s", i, ps[i].Error(), w.file, w.text)
		}
	}
	lines := ProblemLines(ps)
	if len(lines) != len(ps)+1 || !strings.HasSuffix(lines[len(lines)-1], "see docs/runbook.md#jobs-invalid") || lines[0] != ps[0].Error() {
		t.Errorf("ProblemLines: %q", lines)
	}
}

// TestJobLinksAreProblems: a job file is read from the jobs directory
// itself, never through a symbolic link (issue 29, class 1): a link may
// lead to a file another user can write (a job is an unattended session
// with the job's grants), and a dangling one would drop a job without a
// word. Any link is a problem, so no job of the set runs.
func TestJobLinksAreProblems(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "real.toml")
	if err := os.WriteFile(elsewhere, []byte(validJob), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"to a job":     elsewhere,
		"dangling":     filepath.Join(t.TempDir(), "gone.toml"),
		"to a sibling": "ok.toml",
		"to /dev/zero": "/dev/zero",
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"ok.toml": validJob})
			if err := os.Symlink(target, filepath.Join(dir, "l.toml")); err != nil {
				t.Fatal(err)
			}
			jobs, ps, err := LoadIn(dir, time.UTC)
			if err != nil || jobs != nil || len(ps) != 1 || ps[0].File != filepath.Join(dir, "l.toml") ||
				ps[0].Problem != "is a symbolic link; a job is read only from a regular file in the jobs directory itself" {
				t.Fatalf("jobs %v, problems %v, err %v", jobs, ps, err)
			}
		})
	}
}
