package bxctl

import (
	"encoding/hex"
	"fmt"
	"strings"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// The notes commands (issue 17) ask brokerd over admin.sock: the notes are
// brokerd's files, which the owner's account cannot read deployed. Titles
// and texts are the model's words: they are shown as data, behind the
// gutter, like the model's text in chat.

type notesCmd struct {
	List    notesListCmd    `cmd:"" default:"1" help:"List the notes, newest first, with where each came from."`
	Show    notesShowCmd    `cmd:"" help:"Show one note: its label and its text."`
	Promote notesPromoteCmd `cmd:"" help:"Vouch for the version of a note that notes show printed: clear its untrusted mark (written to the audit log)."`
	Delete  notesDeleteCmd  `cmd:"" help:"Delete a note (written to the audit log)."`
}

type notesListCmd struct {
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

type notesShowCmd struct {
	ID          string `arg:"" name:"id" help:"The note's id, as notes list gives it."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

type notesPromoteCmd struct {
	ID          string `arg:"" name:"id" help:"The note's id, as notes list gives it."`
	Version     string `arg:"" name:"version" help:"The note's version, as notes show printed it: only that version is promoted."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

type notesDeleteCmd struct {
	ID          string `arg:"" name:"id" help:"The note's id, as notes list gives it."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// Run prints one line per note: id, written, taint, trust, session, title.
func (c *notesListCmd) Run(e *env) error {
	cmd := e.name + " notes list"
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.NotesList{})
	if err != nil {
		return err
	}
	list, ok := msg.(wire.NoteList)
	if !ok {
		return unexpected(e, cmd, msg)
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(e.stdout, "no notes")
		return nil
	}
	for _, n := range list.Items {
		fmt.Fprintln(e.stdout, noteLine(n))
	}
	return nil
}

// noteLine is a note's one-line summary; the title is the model's, so it
// comes last, quoted as data.
func noteLine(n wire.NoteInfo) string {
	return fmt.Sprintf("%s  %s  %s  %s  session %s  %d bytes  %s", n.ID, n.WrittenAt, n.Taint, trust(n), n.Session,
		n.Bytes, wire.Printable(fmt.Sprintf("%q", n.Title)))
}

// trust is "untrusted", "trusted", or "promoted by <owner>".
func trust(n wire.NoteInfo) string {
	switch {
	case n.PromotedBy != nil:
		return "promoted by " + wire.Printable(*n.PromotedBy)
	case n.Untrusted:
		return "untrusted"
	}
	return "trusted"
}

// Run prints the note's label, then its title and text behind the gutter.
func (c *notesShowCmd) Run(e *env) error {
	cmd := e.name + " notes show"
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.NoteShow{ID: c.ID})
	if err != nil {
		return err
	}
	shown, ok := msg.(wire.NoteShown)
	if !ok {
		return noSuchNote(e, cmd, c.ID, msg)
	}
	fmt.Fprint(e.stdout, noteBlock(shown))
	return nil
}

// noteBlock is what notes show and notes promote print.
func noteBlock(s wire.NoteShown) string {
	var b strings.Builder
	n := s.Note
	fmt.Fprintf(&b, "note %s\n", n.ID)
	fmt.Fprintf(&b, "written %s by session %s\n", n.WrittenAt, n.Session)
	fmt.Fprintf(&b, "label: taint %s, %s\n", n.Taint, trust(n))
	v := hex.EncodeToString(n.Version[:])
	fmt.Fprintf(&b, "version %s (to promote this text: notes promote %s %s)\n", v, wire.Printable(n.ID), v)
	b.WriteString("title:\n" + modelText(n.Title) + "\n")
	b.WriteString("text:\n" + modelText(s.Text) + "\n")
	return b.String()
}

// Run promotes the version the owner read with notes show: brokerd
// refuses it if the note was written again since, so the owner vouches
// for the text they saw, never for one a model put there after. brokerd
// writes note_promoted to the audit log first.
func (c *notesPromoteCmd) Run(e *env) error {
	cmd := e.name + " notes promote"
	var version wire.Hash32
	b, err := hex.DecodeString(c.Version)
	if err != nil || len(b) != len(version) {
		fmt.Fprintf(e.stderr, "%s: version %s is not the 64 hex digits notes show prints\n", cmd, wire.Printable(c.Version))
		return exitCode(usageError)
	}
	copy(version[:], b)
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.NotePromote{ID: c.ID, Version: version})
	if err != nil {
		return err
	}
	shown, ok := msg.(wire.NoteShown)
	if !ok {
		return noSuchNote(e, cmd, c.ID, msg)
	}
	fmt.Fprintf(e.stdout, "promoted %s: trusted now; its taint stays %s\n", shown.Note.ID, shown.Note.Taint)
	return nil
}

// Run deletes; brokerd writes note_deleted to the audit log first.
func (c *notesDeleteCmd) Run(e *env) error {
	cmd := e.name + " notes delete"
	msg, err := ask(e, cmd, adminSocket(c.AdminSocket), wire.NoteDelete{ID: c.ID})
	if err != nil {
		return err
	}
	if _, ok := msg.(wire.OK); !ok {
		return noSuchNote(e, cmd, c.ID, msg)
	}
	fmt.Fprintf(e.stdout, "deleted %s\n", wire.Printable(c.ID))
	return nil
}

// noSuchNote reports an error answer (no such note, or the notes could
// not be used) or an answer of the wrong kind.
func noSuchNote(e *env, cmd, id string, msg wire.Message) error {
	if we, ok := msg.(wire.WireError); ok {
		fmt.Fprintf(e.stderr, "%s: %s: %s\n%s\n", cmd, wire.Printable(id), wire.Printable(we.Detail), runbook.See("note-not-found"))
		return exitCode(1)
	}
	return unexpected(e, cmd, msg)
}
