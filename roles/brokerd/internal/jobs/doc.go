// Package jobs is brokerd's scheduler for the owner's jobs (issue 17, item
// 5): it reads the job files (/etc/boxmaker/jobs/<name>.toml) as strictly as
// grant files, computes when each job is due (a cron line or an interval),
// and starts runs through a callback, skipping a run whose previous one is
// still going and catching up once after the host was down when a job asks
// for it. What a run is (a session, its grants, its audit) is the caller's:
// this package only says when.
//
// The rules are in docs/decisions.md, "Jobs: files, schedules and the
// scheduler (issue 17)".
package jobs
