package bxctl

import (
	"fmt"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// The jobs commands (issue 17) ask brokerd, the scheduler, over admin.sock.

type jobsCmd struct {
	List jobsListCmd `cmd:"" default:"1" help:"List the scheduled jobs with their last and next runs."`
	Run  jobsRunCmd  `cmd:"" help:"Start a job's run now."`
}

type jobsListCmd struct {
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

type jobsRunCmd struct {
	Name        string `arg:"" name:"name" help:"The job's name: its file's name in the jobs directory, without .toml."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run prints each job, then the job files' problems (exit status 1 when
// there are any: no job runs then).
func (c *jobsListCmd) Run(e *env) error {
	cmd := e.name + " jobs"
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.JobsList{})
	if err != nil {
		return err
	}
	list, ok := msg.(wire.JobList)
	if !ok {
		return unexpected(e, cmd, msg)
	}
	if len(list.Items) == 0 && len(list.Problems) == 0 {
		fmt.Fprintln(e.stdout, "no jobs")
	}
	for _, j := range list.Items {
		fmt.Fprintln(e.stdout, jobLine(j))
	}
	if len(list.Problems) > 0 {
		fmt.Fprintln(e.stdout, "the job files have problems; no job runs until they are fixed:")
		for _, p := range list.Problems {
			if p.Line != nil {
				fmt.Fprintf(e.stdout, "%s:%d: %s\n", wire.Printable(p.File), *p.Line, wire.Printable(p.Problem))
			} else {
				fmt.Fprintf(e.stdout, "%s: %s\n", wire.Printable(p.File), wire.Printable(p.Problem))
			}
		}
		fmt.Fprintln(e.stdout, runbook.See("jobs-invalid"))
		return exitCode(1)
	}
	return nil
}

// jobLine is one job: name, schedule, what it does with the result, its
// last run and its next.
func jobLine(j wire.JobInfo) string {
	last := "last never"
	if j.Last != nil {
		last = fmt.Sprintf("last %s (%s) %s", j.Last.Started, j.Last.Trigger, wire.Printable(j.Last.Outcome))
		if j.Last.Session != nil {
			last += " session " + j.Last.Session.String()
		}
	}
	next := "next none"
	if j.Next != nil {
		next = "next " + j.Next.String()
	}
	asks := "asks go to the owner"
	if j.UnattendedAsk == wire.UnattendedDeny {
		asks = "asks denied"
	}
	return fmt.Sprintf("%s  %s  result %s  %s  %s  %s", j.Name, wire.Printable(j.Schedule), j.Result, asks, last, next)
}

// Run starts the job now; brokerd refuses when its previous run still goes.
func (c *jobsRunCmd) Run(e *env) error {
	cmd := e.name + " jobs run"
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.JobRunNow{Name: c.Name})
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case wire.JobRunStarted:
		fmt.Fprintf(e.stdout, "started %s (due %s)\n", m.Job, m.Due)
		return nil
	case wire.WireError:
		fmt.Fprintf(e.stderr, "%s: %s: %s\n%s\n", cmd, wire.Printable(c.Name), wire.Printable(m.Detail), runbook.See("job-not-started"))
		return exitCode(1)
	}
	return unexpected(e, cmd, msg)
}
