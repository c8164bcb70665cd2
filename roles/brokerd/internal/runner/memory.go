package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"boxmaker/policy"
	"boxmaker/roles/brokerd/internal/notes"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// WithMemory is brokerd's Runtime: the tools that run in containers go to
// Tools, and remember and recall run here, in brokerd, on its note store
// (docs/decisions.md, "Memory and scheduled jobs: the design"). Run gives
// the memory tools to no other Runtime: without WithMemory they fail.
type WithMemory struct {
	Tools Runtime
	Notes *notes.Store
	Now   func() time.Time
}

func (w WithMemory) Run(ctx context.Context, spec *RunSpec) (Output, error) {
	return w.Tools.Run(ctx, spec)
}

// RecallLimit is how many notes a search returns, best first.
const RecallLimit = 5

// isMemory reports whether t runs in brokerd.
func isMemory(t policy.Tool) bool { return t == policy.Remember || t == policy.Recall }

// runMemory runs remember or recall for a, claimed from d. It returns the
// result with the label floor applied: a recall's class is raised to the
// highest taint of the notes it returns, and it is untrusted if any of them
// still carries the mark, whatever the grant says (the label follows the
// reader). A remember's note is labelled with st, the state the call was
// decided in (the session's, raised to the floor), and req's session: never
// with anything the model wrote.
func runMemory(rt Runtime, a policy.Allowed, req wire.ToolRequest, st policy.State, res Result) Result {
	w, ok := rt.(WithMemory)
	if !ok || w.Notes == nil {
		return failed(res, "the memory tools are not configured in brokerd")
	}
	switch args := a.Args().(type) {
	case policy.RememberArgs:
		// The guards (a trusted or promoted note is not replaced from an
		// untrusted session, a note that cannot be read is not replaced,
		// the store's cap) are Put's, decided under the store's lock with
		// the write (issue 29, class 1).
		id := ""
		if args.ID != nil {
			id = *args.ID
		}
		n, err := w.Notes.Put(id, args.Title, args.Text, notes.Label{Taint: st.Taint, Untrusted: st.Untrusted,
			Session: req.Session, WrittenAt: wire.TimestampOf(w.Now())})
		if err != nil {
			return failed(res, rememberError(id, err))
		}
		out, err := wire.Marshal(rememberOut{ID: n.ID, Replaced: id != ""})
		if err != nil {
			return failed(res, "internal error in brokerd")
		}
		return succeeded(res, string(out))
	case policy.RecallArgs:
		var found []notes.Note
		if args.ID != nil {
			n, err := w.Notes.Get(*args.ID)
			if err != nil {
				return failed(res, memoryError(err))
			}
			found = []notes.Note{n}
		} else {
			var err error
			if found, err = w.Notes.Search(args.Query, RecallLimit); err != nil {
				return failed(res, memoryError(err))
			}
		}
		out := recallOut{Notes: []recalled{}}
		for _, n := range found {
			res.Class = max(res.Class, n.Label.Taint)
			res.Untrusted = res.Untrusted || n.Untrusted()
			out.Notes = append(out.Notes, recalled{ID: n.ID, Title: n.Title, Text: n.Text, Written: n.Label.WrittenAt})
		}
		data, err := wire.Marshal(out)
		if err != nil {
			return failed(res, "internal error in brokerd")
		}
		return succeeded(res, string(data))
	}
	return failed(res, "internal error in brokerd")
}

type rememberOut struct {
	ID       string `json:"id"`
	Replaced bool   `json:"replaced"`
}

// recalled is what the model reads of a note: its words and when they were
// written. The label is not shown as text the model could quote back as
// its own; it is applied to the session instead.
type recalled struct {
	ID      string         `json:"id"`
	Title   string         `json:"title"`
	Text    string         `json:"text"`
	Written wire.Timestamp `json:"written"`
}

type recallOut struct {
	Notes []recalled `json:"notes"`
}

// rememberError is what the model reads when a remember of id is refused.
func rememberError(id string, err error) string {
	switch {
	case errors.Is(err, notes.ErrProtected):
		return "an untrusted session cannot replace a trusted note; remember it as a new note instead"
	case errors.Is(err, notes.ErrFull):
		return fmt.Sprintf("there are %d notes, the most brokerd keeps; the owner must delete some first", notes.MaxNotes)
	case errors.Is(err, notes.ErrNotReplaced):
		// Not the read's words: they may quote the file's bytes.
		return "note " + id + " cannot be read, so it is not replaced; remember it as a new note instead; " + runbook.See("note-damaged")
	}
	return memoryError(err)
}

func memoryError(err error) string {
	switch {
	case errors.Is(err, notes.ErrNoNote):
		return "there is no note with that id"
	case errors.Is(err, notes.ErrTooLarge), errors.Is(err, notes.ErrInvalid):
		return err.Error()
	case errors.Is(err, notes.ErrDamaged):
		// The decoder's words may quote the file's bytes, which no label
		// covers: the model learns only that the note is unusable.
		return "the note is damaged and cannot be read"
	}
	return fmt.Sprintf("the notes could not be used: %v", err)
}

func failed(res Result, msg string) Result {
	res.Response, res.Status = wire.FailedResponse{Message: msg}, wire.StatusFailed
	return res
}

func succeeded(res Result, content string) Result {
	res.Response = wire.ResultResponse{Content: content, Class: res.Class, Untrusted: res.Untrusted}
	res.Status = wire.StatusResult
	return res
}
