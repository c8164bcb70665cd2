package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"boxmaker/wire"
)

// Binding is which scheduled job a session runs for (issue 17). brokerd
// writes it, synced, before it tells loopd the session's id, and a tool
// request's job comes from here alone: never from loopd.
type Binding struct {
	Job string `json:"job"`
	// DenyAsks is the job file's unattended_ask = "deny", as it was when
	// the run started.
	DenyAsks bool `json:"deny_asks"`
	// Ended is set when the run's turn has ended: the session then sees no
	// grant at all, so loopd cannot keep using it.
	Ended bool `json:"ended"`
}

// Bindings keeps one file per job session, <dir>/<id>.json (brokerd's
// broker/job-sessions/). An interactive session has none.
type Bindings struct {
	dir string
	// mu makes End's read and write one step, and keeps Bind out of it
	// (issue 29, class 1).
	mu sync.Mutex
}

// NewBindings returns the bindings kept in dir, which Bind creates.
func NewBindings(dir string) *Bindings { return &Bindings{dir: dir} }

func (b *Bindings) path(id wire.SessionID) string { return filepath.Join(b.dir, id.String()+".json") }

// ErrBound is Bind's answer for a session that already has a binding: a
// job's run always starts a session of its own.
var ErrBound = errors.New("the session is already bound to a job")

// Bind records that session id runs job, before anything else learns the
// id. A session is bound once: the file is made with link(2), which fails
// if it exists, so two runs racing for one id cannot both have it.
func (b *Bindings) Bind(id wire.SessionID, bd Binding) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !wire.ValidID(bd.Job) || bd.Ended {
		return fmt.Errorf("state: binding %s: job %q is not a job's name", id, bd.Job)
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	data, err := wire.Marshal(bd)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	tmp, err := os.CreateTemp(b.dir, ".bind-*")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Link(tmp.Name(), b.path(id)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("state: %s: %w", id, ErrBound)
		}
		return fmt.Errorf("state: %w", err)
	}
	if err := syncDir(b.dir); err != nil {
		return fmt.Errorf("state: syncing %s: %w", b.dir, err)
	}
	return nil
}

// End marks the run of session id ended. A session with no binding is an
// error: only a job's session ends this way.
func (b *Bindings) End(id wire.SessionID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bd, ok, err := b.Lookup(id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("state: %s has no job binding", id)
	}
	bd.Ended = true
	return b.write(id, bd)
}

// Lookup returns session id's binding; ok is false for an interactive
// session (no file). A file that cannot be read or parsed is an error, and
// the caller denies the call: guessing "interactive" could hand a job's
// session every interactive grant.
func (b *Bindings) Lookup(id wire.SessionID) (bd Binding, ok bool, err error) {
	data, err := readFile(b.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Binding{}, false, nil
	}
	if err != nil {
		return Binding{}, true, fmt.Errorf("state: %w", err)
	}
	if err := wire.Unmarshal(data, &bd); err != nil {
		return Binding{}, true, fmt.Errorf("state: %s: %w", b.path(id), err)
	}
	if !wire.ValidID(bd.Job) {
		return Binding{}, true, fmt.Errorf("state: %s: job %q is not a job's name", b.path(id), bd.Job)
	}
	return bd, true, nil
}

// write replaces the binding atomically, as Store.Write does a state.
func (b *Bindings) write(id wire.SessionID, bd Binding) error {
	data, err := wire.Marshal(bd)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	final := b.path(id)
	tmp := final + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := syncDir(b.dir); err != nil {
		return fmt.Errorf("state: syncing %s: %w", b.dir, err)
	}
	return nil
}
