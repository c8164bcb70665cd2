package wire

// The enums of issue 17's scheduled jobs, as the audit log and admin.sock
// carry them. Job files themselves are brokerd's to parse.

// JobTrigger is why a job's run started.
type JobTrigger uint8

const (
	// TriggerScheduled: the schedule came due.
	TriggerScheduled JobTrigger = iota + 1
	// TriggerCatchUp: a run missed while the host was down, run once at
	// start because the job says catch_up = true.
	TriggerCatchUp
	// TriggerManual: the owner started it (bxctl jobs run).
	TriggerManual
)

var jobTriggerNames = enumNames[JobTrigger]{"job trigger", []string{"", "scheduled", "catch_up", "manual"}}

func (t JobTrigger) String() string                { return jobTriggerNames.str(t) }
func (t JobTrigger) MarshalText() ([]byte, error)  { return jobTriggerNames.text(t) }
func (t *JobTrigger) UnmarshalText(b []byte) error { return parseInto(jobTriggerNames, b, t) }

// JobStatus is how a job's run ended.
type JobStatus uint8

const (
	JobOK JobStatus = iota + 1
	JobFailed
)

var jobStatusNames = enumNames[JobStatus]{"job status", []string{"", "ok", "failed"}}

func (s JobStatus) String() string                { return jobStatusNames.str(s) }
func (s JobStatus) MarshalText() ([]byte, error)  { return jobStatusNames.text(s) }
func (s *JobStatus) UnmarshalText(b []byte) error { return parseInto(jobStatusNames, b, s) }

// SkipReason is why a due run did not start.
type SkipReason uint8

const (
	// SkipOverlap: the job's previous run was still under way.
	SkipOverlap SkipReason = iota + 1
)

var skipReasonNames = enumNames[SkipReason]{"skip reason", []string{"", "overlap"}}

func (r SkipReason) String() string                { return skipReasonNames.str(r) }
func (r SkipReason) MarshalText() ([]byte, error)  { return skipReasonNames.text(r) }
func (r *SkipReason) UnmarshalText(b []byte) error { return parseInto(skipReasonNames, b, r) }

// JobDelivery is what a job does with its run's answer: post it to the
// owner on Mattermost, write it as a note, or both.
type JobDelivery uint8

const (
	JobPost JobDelivery = iota + 1
	JobNote
	JobBoth
)

var jobDeliveryNames = enumNames[JobDelivery]{"job delivery", []string{"", "post", "note", "both"}}

func (r JobDelivery) String() string                { return jobDeliveryNames.str(r) }
func (r JobDelivery) MarshalText() ([]byte, error)  { return jobDeliveryNames.text(r) }
func (r *JobDelivery) UnmarshalText(b []byte) error { return parseInto(jobDeliveryNames, b, r) }

// UnattendedMode is what an ask grant does inside a job's session: ask the
// owner (on Mattermost, with its expiry) or deny at once
// (unattended_denied).
type UnattendedMode uint8

const (
	UnattendedAsk UnattendedMode = iota + 1
	UnattendedDeny
)

var unattendedModeNames = enumNames[UnattendedMode]{"unattended ask", []string{"", "ask", "deny"}}

func (m UnattendedMode) String() string                { return unattendedModeNames.str(m) }
func (m UnattendedMode) MarshalText() ([]byte, error)  { return unattendedModeNames.text(m) }
func (m *UnattendedMode) UnmarshalText(b []byte) error { return parseInto(unattendedModeNames, b, m) }

// Admin messages of issue 17, accepted only on admin.sock:
//
//	notes_list {}         → note_list { items }
//	note_show { id }      → note_shown { note, text }
//	note_promote { id }   → note_shown (the note after promotion)
//	note_delete { id }    → ok
//	jobs_list {}          → job_list { items, problems }
//	job_run_now { name }  → job_run_started { job, due }
//
// An unknown note or job is error no_such_note or no_such_job; a job whose
// previous run is under way is error job_running.

// NotesList asks for every note.
type NotesList struct{}

// NoteList answers NotesList.
type NoteList struct {
	Items []NoteInfo `json:"items"`
}

// NoteShow asks for one note and its text.
type NoteShow struct {
	ID string `json:"id"`
}

// NoteShown answers NoteShow and NotePromote.
type NoteShown struct {
	Note NoteInfo `json:"note"`
	Text string   `json:"text"`
}

// NotePromote is the owner vouching for a note: its untrusted mark is
// cleared, and the audit log says so. Version is the note's version as the
// owner saw it (NoteInfo.Version): a note written again since is not
// promoted, so that a model cannot swap the text between the owner's look
// and the vouching.
type NotePromote struct {
	ID      string `json:"id"`
	Version Hash32 `json:"version"`
}

// NoteDelete deletes a note; the answer is ok.
type NoteDelete struct {
	ID string `json:"id"`
}

// NoteInfo is one note's label as brokerd computed it, never as the model
// wrote it: Bytes is the size of its text; Taint and Untrusted are the
// label's (the writing session's at the moment of writing, Untrusted
// cleared by a promotion); PromotedBy and PromotedAt are null until then.
type NoteInfo struct {
	ID         string     `json:"id"`
	Title      string     `json:"title"`
	Bytes      uint64     `json:"bytes"`
	Taint      DataClass  `json:"taint"`
	Untrusted  bool       `json:"untrusted"`
	Session    SessionID  `json:"session"`
	WrittenAt  Timestamp  `json:"written_at"`
	PromotedBy *string    `json:"promoted_by"`
	PromotedAt *Timestamp `json:"promoted_at"`
	// Version is the SHA-256 of the note's id, title, text and label:
	// note_promote must name it.
	Version Hash32 `json:"version"`
}

// JobsList asks for every job.
type JobsList struct{}

// JobList answers JobsList. Problems are the job files' loading problems
// (file, line, problem), empty when every file is valid.
type JobList struct {
	Items    []JobInfo      `json:"items"`
	Problems []GrantProblem `json:"problems"`
}

// JobRunNow asks brokerd to start job Name now.
type JobRunNow struct {
	Name string `json:"name"`
}

// JobRunStarted answers JobRunNow: the run started, due at Due.
type JobRunStarted struct {
	Job string    `json:"job"`
	Due Timestamp `json:"due"`
}

// JobInfo is one job as listed: Schedule as written in its file (or
// "every 15m" for an interval), Last its last run (null: never ran), Next
// when it is next due (null: never again).
type JobInfo struct {
	Name          string         `json:"name"`
	Schedule      string         `json:"schedule"`
	Result        JobDelivery    `json:"result"`
	UnattendedAsk UnattendedMode `json:"unattended_ask"`
	CatchUp       bool           `json:"catch_up"`
	Last          *JobLastRun    `json:"last"`
	Next          *Timestamp     `json:"next"`
}

// JobLastRun is a job's last run: Ended is null while it runs; Session is
// null when no session was started; Outcome is a short text for the owner.
type JobLastRun struct {
	Due     Timestamp  `json:"due"`
	Started Timestamp  `json:"started"`
	Ended   *Timestamp `json:"ended"`
	Trigger JobTrigger `json:"trigger"`
	Session *SessionID `json:"session"`
	Outcome string     `json:"outcome"`
}

func (NotesList) Kind() string     { return KindNotesList }
func (NoteList) Kind() string      { return KindNoteList }
func (NoteShow) Kind() string      { return KindNoteShow }
func (NoteShown) Kind() string     { return KindNoteShown }
func (NotePromote) Kind() string   { return KindNotePromote }
func (NoteDelete) Kind() string    { return KindNoteDelete }
func (JobsList) Kind() string      { return KindJobsList }
func (JobList) Kind() string       { return KindJobList }
func (JobRunNow) Kind() string     { return KindJobRunNow }
func (JobRunStarted) Kind() string { return KindJobRunStarted }
