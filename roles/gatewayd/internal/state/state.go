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
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

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
// over a damaged one, which would lose every conversation's session.
func Open(path string) (*State, error) {
	s := &State{path: path, threads: map[string]Thread{}, approvals: map[uint64]Approval{}, byPost: map[string]uint64{}, cursors: map[string]Cursor{}}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w; %s", err, runbook.See("gatewayd-state-damaged"))
	}
	var f file
	if err := wire.Unmarshal(bytes.TrimSuffix(b, []byte("\n")), &f); err != nil {
		return nil, fmt.Errorf("state: %s is damaged: %v; %s", path, err, runbook.See("gatewayd-state-damaged"))
	}
	for _, t := range f.Threads {
		s.threads[t.Root] = t
	}
	for _, a := range f.Approvals {
		s.approvals[a.ID] = a
		s.byPost[a.Post] = a.ID
	}
	for _, c := range f.Cursors {
		s.cursors[c.Channel] = c
	}
	return s, nil
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
// there after a crash, never a mixture.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
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
