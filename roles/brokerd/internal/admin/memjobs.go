package admin

import (
	"context"
	"errors"
	"fmt"

	"boxmaker/roles/brokerd/internal/jobs"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/wire"
)

// Jobs is what admin.sock asks of the scheduler (issue 17).
type Jobs interface {
	// List reads the job files again and lists the jobs with their last
	// and next runs, and the files' problems.
	List() wire.JobList
	// RunNow reads the job files again and starts the named job's run.
	RunNow(name string) (wire.JobRunStarted, error)
}

// Auditor is what promoting and deleting a note need of the audit log:
// the record is synced before the note changes.
type Auditor interface {
	Append(ev wire.AuditEvent) (uint64, error)
}

type ownerKey struct{}

// WithOwner is ctx carrying the name of the owner who sent the request
// (admin.sock's peer, from SO_PEERCRED), for the audit records of what
// the owner does to notes.
func WithOwner(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, ownerKey{}, name)
}

func ownerOf(ctx context.Context) string {
	if s, ok := ctx.Value(ownerKey{}).(string); ok && s != "" {
		return s
	}
	return "unknown"
}

// handleMemJobs answers the notes and jobs requests; ok is false for any
// other message.
func (a *Admin) handleMemJobs(ctx context.Context, msg wire.Message) (wire.Message, bool) {
	switch m := msg.(type) {
	case wire.NotesList:
		if a.Notes == nil {
			return unavailable("notes"), true
		}
		list, err := a.Notes.List()
		if err != nil {
			return noteError(err), true
		}
		out := wire.NoteList{Items: []wire.NoteInfo{}}
		for _, n := range list {
			out.Items = append(out.Items, noteInfo(n))
		}
		return out, true
	case wire.NoteShow:
		if a.Notes == nil {
			return unavailable("notes"), true
		}
		n, err := a.Notes.Get(m.ID)
		if err != nil {
			return noteError(err), true
		}
		return wire.NoteShown{Note: noteInfo(n), Text: n.Text}, true
	case wire.NotePromote:
		return a.promote(ctx, m), true
	case wire.NoteDelete:
		return a.deleteNote(ctx, m), true
	case wire.JobsList:
		if a.Jobs == nil {
			return unavailable("jobs"), true
		}
		return a.Jobs.List(), true
	case wire.JobRunNow:
		if a.Jobs == nil {
			return unavailable("jobs"), true
		}
		started, err := a.Jobs.RunNow(m.Name)
		switch {
		case errors.Is(err, jobs.ErrRunning):
			return wire.WireError{Code: wire.JobRunning, Detail: "its previous run is still going"}, true
		case errors.Is(err, jobs.ErrNoJob):
			return wire.WireError{Code: wire.NoSuchJob, Detail: "there is no such job (see bxctl jobs)"}, true
		case err != nil:
			return wire.WireError{Code: wire.Internal, Detail: err.Error()}, true
		}
		return started, true
	}
	return nil, false
}

// promote clears a note's untrusted mark for the owner: the audit record
// first, then the note. The note must be the version the owner saw (its
// Version): the store checks that and promotes in one step, so a remember
// cannot swap the text between the owner's look and the vouching. If the
// store refuses after the record was written, the record names a promotion
// that did not happen; brokerd logs nothing more, and the note stays as it
// was (the record errs on the side of the owner having looked).
func (a *Admin) promote(ctx context.Context, m wire.NotePromote) wire.Message {
	if a.Notes == nil {
		return unavailable("notes")
	}
	a.noteMu.Lock()
	defer a.noteMu.Unlock()
	n, err := a.Notes.Get(m.ID)
	if err != nil {
		return noteError(err)
	}
	if n.Version() != m.Version {
		return changed(n)
	}
	by := ownerOf(ctx)
	if _, err := a.Audit.Append(wire.NotePromotedEvent{Note: n.ID, By: by, Taint: n.Label.Taint, Untrusted: n.Untrusted()}); err != nil {
		return wire.WireError{Code: wire.Internal, Detail: "the audit log cannot be written; nothing was promoted: " + err.Error()}
	}
	p, err := a.Notes.PromoteSeen(n.ID, m.Version, by, wire.TimestampOf(a.Now()))
	if errors.Is(err, notes.ErrChanged) {
		return changed(n)
	}
	if err != nil {
		return noteError(err)
	}
	return wire.NoteShown{Note: noteInfo(p), Text: p.Text}
}

func changed(n notes.Note) wire.Message {
	return wire.WireError{Code: wire.NoSuchNote, Detail: fmt.Sprintf("note %s was written again after the version you saw; nothing was promoted: show it again", n.ID)}
}

// deleteNote deletes a note: the audit record first.
func (a *Admin) deleteNote(ctx context.Context, m wire.NoteDelete) wire.Message {
	if a.Notes == nil {
		return unavailable("notes")
	}
	a.noteMu.Lock()
	defer a.noteMu.Unlock()
	// Not Get first: a damaged note does not read, and the owner's delete
	// is the one way to remove it (issue 29, class 1). The store checks
	// that the note is there, the audit record is written, and the file
	// is removed, under the store's lock.
	var auditErr error
	err := a.Notes.DeleteRecorded(m.ID, func() error {
		_, auditErr = a.Audit.Append(wire.NoteDeletedEvent{Note: m.ID, By: ownerOf(ctx)})
		return auditErr
	})
	switch {
	case auditErr != nil:
		return wire.WireError{Code: wire.Internal, Detail: "the audit log cannot be written; nothing was deleted: " + auditErr.Error()}
	case err != nil:
		return noteError(err)
	}
	return wire.OK{}
}

func noteInfo(n notes.Note) wire.NoteInfo {
	info := wire.NoteInfo{ID: n.ID, Title: n.Title, Bytes: uint64(len(n.Text)), Taint: n.Label.Taint, Untrusted: n.Label.Untrusted,
		Session: n.Label.Session, WrittenAt: n.Label.WrittenAt, Version: n.Version()}
	if n.Promoted != nil {
		by, at := n.Promoted.By, n.Promoted.At
		info.PromotedBy, info.PromotedAt = &by, &at
	}
	return info
}

func noteError(err error) wire.Message {
	if errors.Is(err, notes.ErrNoNote) {
		return wire.WireError{Code: wire.NoSuchNote, Detail: "there is no note with that id"}
	}
	return wire.WireError{Code: wire.Internal, Detail: "the notes cannot be used: " + err.Error()}
}

func unavailable(what string) wire.Message {
	return wire.WireError{Code: wire.Internal, Detail: "brokerd runs without " + what}
}
