package jobs

import (
	"fmt"
	"time"

	"boxmaker/wire"
)

// Trigger says why a run started.
type Trigger uint8

const (
	// Scheduled: the job's due time came.
	Scheduled Trigger = iota + 1
	// CatchUp: a due time passed while the host (or brokerd) was down and
	// the job says catch_up = true; it runs once when the scheduler starts.
	CatchUp
	// Manual: the owner asked for it (`bxctl jobs run <name>`).
	Manual
)

func (t Trigger) String() string {
	switch t {
	case Scheduled:
		return "scheduled"
	case CatchUp:
		return "catch_up"
	case Manual:
		return "manual"
	}
	return fmt.Sprintf("Trigger(%d)", uint8(t))
}

// MarshalText writes the trigger into the state file; an invalid one is an
// error, never a file brokerd would refuse to read back.
func (t Trigger) MarshalText() ([]byte, error) {
	if t < Scheduled || t > Manual {
		return nil, fmt.Errorf("jobs: invalid trigger %d", uint8(t))
	}
	return []byte(t.String()), nil
}

func (t *Trigger) UnmarshalText(b []byte) error {
	for v := Scheduled; v <= Manual; v++ {
		if string(b) == v.String() {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("jobs: unknown trigger %q", b)
}

// Run is one run of a job.
type Run struct {
	Job Job
	// Due is the due time the run is for: the slot of a scheduled run,
	// the first missed slot of a catch-up run, the time of the owner's
	// request for a manual one.
	Due     time.Time
	Trigger Trigger
}

// LastRun is the latest run of a job, as Status shows it.
type LastRun struct {
	Due, Started time.Time
	// Ended is zero while the run is going (and when brokerd stopped
	// before it ended).
	Ended   time.Time
	Trigger Trigger
	// Outcome is "running", "ok" or "failed: <why>".
	Outcome string
}

// JobStatus is one job as `bxctl jobs` lists it.
type JobStatus struct {
	Name     string
	Schedule string
	// Last is nil when the job has not run since it was first seen.
	Last *LastRun
	// Next is the next due time.
	Next time.Time
}

// Wire is t as the audit log and admin.sock carry it.
func (t Trigger) Wire() wire.JobTrigger {
	switch t {
	case CatchUp:
		return wire.TriggerCatchUp
	case Manual:
		return wire.TriggerManual
	}
	return wire.TriggerScheduled
}
