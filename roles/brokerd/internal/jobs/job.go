package jobs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// Result says what becomes of a run's result.
type Result uint8

const (
	// ResultPost posts the result to the owner on Mattermost.
	ResultPost Result = iota + 1
	// ResultNote writes the result as a note.
	ResultNote
	// ResultBoth does both.
	ResultBoth
)

// Post reports whether the result is posted to the owner.
func (r Result) Post() bool { return r == ResultPost || r == ResultBoth }

// Note reports whether the result is written as a note.
func (r Result) Note() bool { return r == ResultNote || r == ResultBoth }

func (r Result) String() string {
	switch r {
	case ResultPost:
		return "post"
	case ResultNote:
		return "note"
	case ResultBoth:
		return "both"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// MaxPromptBytes bounds a job's prompt: it is the first message of every
// run, and a prompt this long is a document to put in memory/, not a task.
const MaxPromptBytes = 16 << 10

// MaxJobFileBytes bounds one job file: a prompt at its limit and the keys
// fit many times over; a stray large file is refused, not read.
const MaxJobFileBytes = 1 << 20

// Job is one valid job file.
type Job struct {
	// Name is the file's stem, a wire.ValidID.
	Name     string
	Schedule Schedule
	// Prompt is the owner's text each run starts with.
	Prompt string
	Result Result
	// DenyAsks is unattended_ask = "deny": an ask in a run is denied at
	// once instead of going to the owner.
	DenyAsks bool
	// CatchUp is catch_up = true: a run missed while the host was down
	// runs once when the scheduler starts.
	CatchUp bool
	// Sha256 is the hash of the file's bytes, to tell an edited job.
	Sha256 wire.Hash32
}

// Problem is a problem with a job file, at a line when one is known (0: a
// missing key, or the file as a whole).
type Problem = wire.ConfigError

// ProblemLines is what brokerd logs (and bxctl shows) for problems: one
// line per problem and the runbook pointer.
func ProblemLines(ps []Problem) []string {
	out := make([]string, 0, len(ps)+1)
	for i := range ps {
		out = append(out, ps[i].Error())
	}
	return append(out, fmt.Sprintf("jobs: %d problem(s) in the job files; no job runs until every file is valid; %s", len(ps), runbook.See("jobs-invalid")))
}

// jobFile is a job file's keys. Every field is a string or a bool so that
// the strict decoder checks each key's TOML type; the values are checked
// here, where a problem can name the key's line.
type jobFile struct {
	Schedule      string `toml:"schedule"`
	Every         string `toml:"every"`
	Prompt        string `toml:"prompt"`
	Result        string `toml:"result"`
	UnattendedAsk string `toml:"unattended_ask"`
	CatchUp       bool   `toml:"catch_up"`
}

// parseJob checks one file's bytes; file is the name problems carry. loc
// is the zone cron lines are read in.
func parseJob(file, name string, data []byte, loc *time.Location) (Job, []Problem) {
	f := jobFile{UnattendedAsk: "ask"}
	if err := wire.DecodeConfig(file, data, &f); err != nil {
		var ce *wire.ConfigError
		if errors.As(err, &ce) {
			return Job{}, []Problem{*ce}
		}
		return Job{}, []Problem{{File: file, Problem: err.Error()}}
	}
	var ps []Problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, Problem{File: file, Line: wire.ConfigKeyLine(data, key), Problem: fmt.Sprintf(format, args...)})
	}
	j := Job{Name: name, Prompt: f.Prompt, CatchUp: f.CatchUp, Sha256: wire.Sha256(data)}
	hasSchedule, hasEvery := wire.ConfigKeyLine(data, "schedule") > 0, wire.ConfigKeyLine(data, "every") > 0
	switch {
	case hasSchedule && hasEvery:
		bad("every", "both schedule and every: a job has exactly one of them")
	case hasSchedule:
		s, err := ParseCronIn(f.Schedule, loc)
		if err != nil {
			bad("schedule", "schedule: %s", strings.TrimPrefix(err.Error(), "cron: "))
		}
		j.Schedule = s
	case hasEvery:
		s, err := ParseEvery(f.Every)
		if err != nil {
			bad("every", "%s", err)
		}
		j.Schedule = s
	default:
		bad("schedule", `neither schedule nor every: a job needs one (schedule = "0 7 * * *" or every = "6h")`)
	}
	switch {
	case wire.ConfigKeyLine(data, "prompt") == 0:
		bad("prompt", "prompt is missing")
	case strings.TrimSpace(f.Prompt) == "":
		bad("prompt", "prompt is empty")
	case len(f.Prompt) > MaxPromptBytes:
		bad("prompt", "prompt is %d bytes, more than %d", len(f.Prompt), MaxPromptBytes)
	}
	switch f.Result {
	case "post":
		j.Result = ResultPost
	case "note":
		j.Result = ResultNote
	case "both":
		j.Result = ResultBoth
	default:
		if wire.ConfigKeyLine(data, "result") == 0 {
			bad("result", `result is missing: "post", "note" or "both"`)
		} else {
			bad("result", `result %q is not "post", "note" or "both"`, f.Result)
		}
	}
	switch f.UnattendedAsk {
	case "ask":
	case "deny":
		j.DenyAsks = true
	default:
		bad("unattended_ask", `unattended_ask %q is not "ask" or "deny"`, f.UnattendedAsk)
	}
	if len(ps) > 0 {
		return Job{}, ps
	}
	return j, nil
}

// ParseEvery parses a job file's every: a Go duration ("15m", "6h",
// "1h30m") of a whole number of seconds from MinEvery to MaxEvery.
func ParseEvery(s string) (Schedule, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("every %q is not a duration such as \"15m\" or \"6h\"", s)
	case d%time.Second != 0:
		// The state file keeps due times to the millisecond: a due time
		// with a fraction of a second could read back as before itself
		// and be caught up twice.
		return nil, fmt.Errorf("every %q is not a whole number of seconds", s)
	case d < MinEvery:
		return nil, fmt.Errorf("every %q is shorter than %s", s, MinEvery)
	case d > MaxEvery:
		return nil, fmt.Errorf("every %q is longer than %s; use a cron schedule", s, MaxEvery)
	}
	return Every(d), nil
}

// Wire is r as admin.sock carries it.
func (r Result) Wire() wire.JobDelivery {
	switch r {
	case ResultNote:
		return wire.JobNote
	case ResultBoth:
		return wire.JobBoth
	}
	return wire.JobPost
}
