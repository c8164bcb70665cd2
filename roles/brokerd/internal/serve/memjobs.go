package serve

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"boxmaker/roles/brokerd/internal/config"
	"boxmaker/roles/brokerd/internal/jobrun"
	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// jobsReload is how often brokerd reads the jobs directory again, so that
// a job file the owner wrote or edited is scheduled without a restart.
// admin.sock's jobs requests read it at once.
const jobsReload = time.Minute

// openNotes opens the note store under the home: memory/notes/ and index/
// (issue 17). A rebuilt index and damaged notes are told to the owner.
func openNotes(home string, log func(lines ...string)) (*notes.Store, error) {
	st, rebuilt, err := notes.Open(filepath.Join(home, "memory", "notes"), filepath.Join(home, "index"))
	if err != nil {
		return nil, fmt.Errorf("the notes cannot be opened: %w; %s", err, runbook.See("notes-unavailable"))
	}
	// A first start has no index and no notes: nothing to tell.
	if rebuilt && st.Len() > 0 {
		log(fmt.Sprintf("brokerd: the notes' index was missing or damaged; rebuilt it from %d notes", st.Len()))
	}
	for _, f := range st.Damaged() {
		log("brokerd: note file "+wire.Printable(f)+" is damaged; it is left out of every recall and list", runbook.See("note-damaged"))
	}
	return st, nil
}

// jobsService is brokerd's scheduler and what admin.sock asks of it.
type jobsService struct {
	dir    string
	runner *jobrun.Runner
	sched  *jobs.Scheduler
	log    func(lines ...string)

	mu       sync.Mutex
	problems []wire.GrantProblem // the last load's, for bxctl jobs
	jobs     []jobs.Job          // the last load's, when it had no problem
}

// startJobs loads the jobs, makes the scheduler and runs it, on the
// server's wait group, until ctx ends.
func (s *Server) startJobs(ctx context.Context, cfg config.Config, r *jobrun.Runner, clock jobs.Clock) (*jobsService, error) {
	js := &jobsService{dir: cfg.Paths.Jobs, runner: r, log: s.log}
	list, valid := js.load()
	sched, err := jobs.New(list, filepath.Join(cfg.Paths.Home, "broker", "jobs.json"), clock, jobs.Hooks{
		Start:   r.Start,
		Skipped: js.skipped,
		Log:     s.log,
	})
	if err != nil {
		return nil, err
	}
	if !valid {
		sched.Suspend()
	}
	js.sched = sched
	s.wg.Go(func() {
		if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
			s.log("brokerd: the job scheduler stopped: " + err.Error())
		}
	})
	s.wg.Go(func() {
		tick := time.NewTicker(jobsReload)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				js.reload()
			case <-ctx.Done():
				return
			}
		}
	})
	return js, nil
}

// load reads the jobs directory. A set with problems keeps no job: like
// grants, an invalid set is not half used; the owner sees every problem in
// the log and in bxctl jobs. valid is false for such a set: the scheduler
// is suspended, not given an empty set, so the jobs' records are kept.
func (js *jobsService) load() (list []jobs.Job, valid bool) {
	list, problems, err := jobs.Load(js.dir)
	var gp []wire.GrantProblem
	if err != nil {
		gp = []wire.GrantProblem{{File: ".", Problem: err.Error()}}
		list = nil
	}
	for _, p := range problems {
		line := uint64(p.Line)
		q := wire.GrantProblem{File: p.File, Problem: p.Problem}
		if line > 0 {
			q.Line = &line
		}
		gp = append(gp, q)
	}
	if len(gp) > 0 {
		list = nil
	}
	js.mu.Lock()
	changed := fmt.Sprint(gp) != fmt.Sprint(js.problems)
	js.problems, js.jobs = gp, list
	js.mu.Unlock()
	if changed && len(gp) > 0 {
		lines := []string{"brokerd: the job files have problems; no job runs until they are fixed:"}
		for _, p := range gp {
			lines = append(lines, "  "+problemLine(p))
		}
		js.log(append(lines, runbook.See("jobs-invalid"))...)
	}
	return list, len(gp) == 0
}

// reload reads the directory again and gives the scheduler the new set,
// or suspends it while the set has problems.
func (js *jobsService) reload() {
	list, valid := js.load()
	if !valid {
		js.sched.Suspend()
		return
	}
	if err := js.sched.Replace(list); err != nil {
		js.log("brokerd: the job set was not replaced: " + err.Error())
	}
}

// List reads the job files again and lists every job with its last and
// next runs (admin.sock's jobs_list).
func (js *jobsService) List() wire.JobList {
	js.reload()
	js.mu.Lock()
	byName := map[string]jobs.Job{}
	for _, j := range js.jobs {
		byName[j.Name] = j
	}
	out := wire.JobList{Items: []wire.JobInfo{}, Problems: append([]wire.GrantProblem{}, js.problems...)}
	js.mu.Unlock()
	for _, st := range js.sched.Status() {
		j, ok := byName[st.Name]
		if !ok {
			continue
		}
		info := wire.JobInfo{Name: st.Name, Schedule: st.Schedule, Result: j.Result.Wire(), UnattendedAsk: wire.UnattendedAsk,
			CatchUp: j.CatchUp}
		if j.DenyAsks {
			info.UnattendedAsk = wire.UnattendedDeny
		}
		if !st.Next.IsZero() {
			next := wire.TimestampOf(st.Next)
			info.Next = &next
		}
		if l := st.Last; l != nil {
			last := wire.JobLastRun{Due: wire.TimestampOf(l.Due), Started: wire.TimestampOf(l.Started), Trigger: l.Trigger.Wire(),
				Outcome: l.Outcome}
			if !l.Ended.IsZero() {
				ended := wire.TimestampOf(l.Ended)
				last.Ended = &ended
			}
			if id, ok := js.runner.LastSession(st.Name); ok {
				last.Session = &id
			}
			info.Last = &last
		}
		out.Items = append(out.Items, info)
	}
	return out
}

// RunNow reads the job files again and starts the named job now.
func (js *jobsService) RunNow(name string) (wire.JobRunStarted, error) {
	js.reload()
	r, err := js.sched.RunNow(name)
	if err != nil {
		return wire.JobRunStarted{}, err
	}
	return wire.JobRunStarted{Job: r.Job.Name, Due: wire.TimestampOf(r.Due)}, nil
}

// skipped audits a run not started because the previous one still runs.
func (js *jobsService) skipped(r jobs.Run) {
	if _, err := js.runner.Audit.Append(wire.JobSkippedEvent{Job: r.Job.Name, Due: wire.TimestampOf(r.Due), Reason: wire.SkipOverlap}); err != nil {
		js.log("brokerd: job " + r.Job.Name + ": a skipped run could not be recorded: " + err.Error())
	}
}

func problemLine(p wire.GrantProblem) string {
	if p.Line != nil {
		return fmt.Sprintf("%s:%d: %s", p.File, *p.Line, p.Problem)
	}
	return p.File + ": " + p.Problem
}
