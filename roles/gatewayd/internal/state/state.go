// Package state is gatewayd's own state file, <home>/gateway/state.json:
// which Mattermost thread is which session (so a restart keeps
// conversations), which post shows which approval (so a request that
// brokerd sends again after a reconnect reuses its post), and how far each
// channel has been read (so what was missed while the WebSocket was down is
// handled once). Every change is written at once, atomically: a temporary
// file, synced, renamed over the old one, and the directory synced.
package state

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// Thread is one conversation: a root post in an owner's direct channel.
type Thread struct {
	Root    string         `json:"root"`
	Channel string         `json:"channel"`
	Owner   string         `json:"owner"`
	Session wire.SessionID `json:"session"`
}

// Approval is one approval post.
type Approval struct {
	ID      uint64         `json:"id"`
	Broker  string         `json:"broker"`
	Post    string         `json:"post"`
	Channel string         `json:"channel"`
	Text    string         `json:"text"` // as posted, so an edit keeps it above the outcome
	Expires wire.Timestamp `json:"expires"`
	Ended   bool           `json:"ended"`
	// Answer is the owner's answer that counts, written before it is
	// passed to brokerd: a restart gives brokerd that one, never another.
	Answer *wire.OwnerAnswer `json:"answer,omitzero"`
}

// Cursor is how far a channel has been read: every post created before At
// minus Overlap has been handled, and Seen holds the posts handled since
// then (catch-up reads that far back, since posts made in the same moment
// can arrive in either order).
type Cursor struct {
	Channel string `json:"channel"`
	At      int64  `json:"at"`
	Seen    []Seen `json:"seen"`
}

// Seen is a post handled within a cursor's overlap.
type Seen struct {
	ID string `json:"id"`
	At int64  `json:"at"`
}

// Overlap is how far before a cursor catch-up reads again, in ms.
const Overlap = 5000

// keepEnded is how long an ended or expired approval is kept, so that a
// late answer on its post is recognised (and logged) rather than ignored
// as a stranger's post.
const keepEnded = 24 * 3600 * 1000

type file struct {
	Threads   []Thread   `json:"threads"`
	Approvals []Approval `json:"approvals"`
	Cursors   []Cursor   `json:"cursors"`
}

// State is the loaded file. It is safe for concurrent use.
type State struct {
	path      string
	mu        sync.Mutex
	threads   map[string]Thread
	approvals map[uint64]Approval
	byPost    map[string]uint64 // approval post → approval id: every reaction and reply asks
	cursors   map[string]Cursor
}

// Open loads the state at path, or starts an empty one if there is none. A
// file that cannot be read as a state is an error: gatewayd does not start
// over a damaged one, which would lose every conversation's session. What
// is at path must be a regular file: a link is not followed (nor taken,
// dangling, for no file), and a FIFO is not waited on.
func Open(path string) (*State, error) {
	s := &State{path: path, threads: map[string]Thread{}, approvals: map[uint64]Approval{}, byPost: map[string]uint64{}, cursors: map[string]Cursor{}}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	b, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var f file
	if err := wire.Unmarshal(bytes.TrimSuffix(b, []byte("\n")), &f); err != nil {
		return nil, fmt.Errorf("state: %s is damaged: %v; %s", path, err, runbook.See("gatewayd-state-damaged"))
	}
	if err := s.load(f); err != nil {
		return nil, fmt.Errorf("state: %s is damaged: %v; %s", path, err, runbook.See("gatewayd-state-damaged"))
	}
	return s, nil
}

// readFile reads path, which must be a regular file; fs.ErrNotExist only
// when nothing at all is there.
func readFile(path string) ([]byte, error) {
	notFile := func(m fs.FileMode) error {
		return fmt.Errorf("state: %s is not a regular file (it is a %s); %s", path, kind(m), runbook.See("gatewayd-state-not-a-file"))
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w; %s", err, runbook.See("gatewayd-state-damaged"))
	}
	if !fi.Mode().IsRegular() {
		return nil, notFile(fi.Mode())
	}
	// O_NOFOLLOW and O_NONBLOCK: what was swapped in since the Lstat is
	// refused below, not followed or waited on.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, notFile(fs.ModeSymlink)
	}
	if err != nil {
		return nil, fmt.Errorf("state: %s: %w; %s", path, err, runbook.See("gatewayd-state-damaged"))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		if err != nil {
			return nil, fmt.Errorf("state: %w; %s", err, runbook.See("gatewayd-state-damaged"))
		}
		return nil, notFile(fi.Mode())
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("state: %w; %s", err, runbook.See("gatewayd-state-damaged"))
	}
	return b, nil
}

// kind names a file's type.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "file of another kind"
}

// load fills the tables from f: one entry per thread root, approval id,
// approval post and channel, or which one counts would be the last read.
func (s *State) load(f file) error {
	for _, t := range f.Threads {
		if _, dup := s.threads[t.Root]; dup {
			return fmt.Errorf("thread %s is there twice", t.Root)
		}
		s.threads[t.Root] = t
	}
	for _, a := range f.Approvals {
		if _, dup := s.approvals[a.ID]; dup {
			return fmt.Errorf("approval %d is there twice", a.ID)
		}
		if _, dup := s.byPost[a.Post]; dup {
			return fmt.Errorf("post %s shows two approvals", a.Post)
		}
		if a.Answer != nil && a.Answer.Post != a.Post {
			return fmt.Errorf("approval %d's answer was given on post %s, not on its own", a.ID, a.Answer.Post)
		}
		s.approvals[a.ID] = a
		s.byPost[a.Post] = a.ID
	}
	for _, c := range f.Cursors {
		if _, dup := s.cursors[c.Channel]; dup {
			return fmt.Errorf("channel %s has two cursors", c.Channel)
		}
		s.cursors[c.Channel] = c
	}
	return nil
}

// Thread returns the conversation rooted at post root.
func (s *State) Thread(root string) (Thread, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.threads[root]
	return t, ok
}

// ThreadOf returns the conversation of a session, if it came from Mattermost.
func (s *State) ThreadOf(id wire.SessionID) (Thread, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.threads {
		if t.Session == id {
			return t, true
		}
	}
	return Thread{}, false
}

// SetThread records a conversation and writes the file.
func (s *State) SetThread(t Thread) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.threads[t.Root] = t
	return s.saveLocked()
}

// Approval returns approval id's post.
func (s *State) Approval(id uint64) (Approval, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvals[id]
	return a, ok
}

// Approvals returns every approval post, in no order.
func (s *State) Approvals() []Approval {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Approval, 0, len(s.approvals))
	for _, a := range s.approvals {
		out = append(out, a)
	}
	return out
}

// ApprovalByPost returns the approval shown by post.
func (s *State) ApprovalByPost(post string) (Approval, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byPost[post]
	if !ok {
		return Approval{}, false
	}
	return s.approvals[id], true
}

// PutApproval records an approval post and writes the file; approvals that
// ended or expired more than a day before now are dropped.
func (s *State) PutApproval(a Approval, now wire.Timestamp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.approvals[a.ID]; ok && old.Post != a.Post {
		delete(s.byPost, old.Post)
	}
	s.approvals[a.ID] = a
	s.byPost[a.Post] = a.ID
	for id, old := range s.approvals {
		if old.Expires+keepEnded < now {
			delete(s.approvals, id)
			delete(s.byPost, old.Post)
		}
	}
	return s.saveLocked()
}

// Why an answer was not written.
var (
	ErrNoApproval = errors.New("the state file holds no such approval")
	ErrEnded      = errors.New("the approval has already ended")
	ErrAnswered   = errors.New("the approval already has its answer")
)

// Answer writes ans as approval id's answer, if it has none and has not
// ended: the check and the write are one step under the lock. When the
// write fails the answer is not kept (in memory either, or a later write
// would make it count after a restart) and the error says why.
func (s *State) Answer(id uint64, ans wire.OwnerAnswer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvals[id]
	switch {
	case !ok || a.Post != ans.Post:
		return ErrNoApproval
	case a.Ended:
		return ErrEnded
	case a.Answer != nil:
		return ErrAnswered
	}
	a.Answer = &ans
	s.approvals[id] = a
	if err := s.saveLocked(); err != nil {
		a.Answer = nil
		s.approvals[id] = a
		return err
	}
	return nil
}

// EndApproval marks approval id ended and writes the file; false when the
// file holds no such approval.
func (s *State) EndApproval(id uint64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvals[id]
	if !ok {
		return false, nil
	}
	a.Ended = true
	s.approvals[id] = a
	return true, s.saveLocked()
}

// Cursor returns the channel's cursor, if it has been read before.
func (s *State) Cursor(channel string) (Cursor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[channel]
	return c, ok
}

// Handled says whether post id, created at createAt in channel, has been
// handled already: before the cursor's overlap, or seen within it.
func (s *State) Handled(channel, id string, createAt int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[channel]
	if !ok {
		return false
	}
	return createAt < c.At-Overlap || slices.ContainsFunc(c.Seen, func(x Seen) bool { return x.ID == id })
}

// Advance records post id, created at createAt, as handled in channel, and
// writes the file. Posts older than the overlap leave Seen.
func (s *State) Advance(channel, id string, createAt int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cursors[channel]
	c.Channel = channel
	c.At = max(c.At, createAt)
	seen := []Seen{{id, createAt}}
	for _, x := range c.Seen {
		if x.ID != id && x.At >= c.At-Overlap {
			seen = append(seen, x)
		}
	}
	c.Seen = seen
	s.cursors[channel] = c
	return s.saveLocked()
}

// StartCursor sets a channel's cursor where there is none, so that a first
// start handles what is written from then on, not the channel's history.
func (s *State) StartCursor(channel string, at int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cursors[channel]; ok {
		return nil
	}
	s.cursors[channel] = Cursor{Channel: channel, At: at + Overlap, Seen: []Seen{}}
	return s.saveLocked()
}

func (s *State) saveLocked() error {
	f := file{Threads: []Thread{}, Approvals: []Approval{}, Cursors: []Cursor{}}
	for _, t := range s.threads {
		f.Threads = append(f.Threads, t)
	}
	for _, a := range s.approvals {
		f.Approvals = append(f.Approvals, a)
	}
	for _, c := range s.cursors {
		if c.Seen == nil {
			c.Seen = []Seen{}
		}
		f.Cursors = append(f.Cursors, c)
	}
	slices.SortFunc(f.Threads, func(a, b Thread) int { return cmp.Compare(a.Root, b.Root) })
	slices.SortFunc(f.Approvals, func(a, b Approval) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(f.Cursors, func(a, b Cursor) int { return cmp.Compare(a.Channel, b.Channel) })
	b, err := wire.Marshal(f)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return writeAtomic(s.path, append(b, '\n'))
}

// writeAtomic replaces path with data: the old file or the new one is
// there after a crash, never a mixture. The temporary file is made anew
// (O_EXCL, after removing a leftover): a link planted at its name is
// neither written through nor renamed over the state file.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state: removing the leftover %s: %w", tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("state: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("state: syncing %s: %w", filepath.Dir(path), err)
	}
	return nil
}
