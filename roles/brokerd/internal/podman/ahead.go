package podman

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"

	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/runbook"
)

// Containers made ahead (issue 26; docs/decisions.md, "The next call's
// container is made ahead"). Podman's init of a container (storage,
// conmon, `runc create`) is most of a call's time, and none of it depends
// on the call: only on the tool and the grant's mounts. So once a call is
// over, a container for another call like it is created and initialised
// in the background, never started; the next call with the same tool and
// the same mounts, whose sources are the same objects, starts that one
// instead of making its own. It is still a fresh container: nothing ever
// ran in it, its root is its own, and it is used once and removed after
// its call like any other.
//
// Never made ahead: a call with a secret or egress (their mounts are the
// call's own), and any call under userns = "auto", where each container
// holds its part of the subordinate ids for as long as it exists.

// aheadMaxAge is how long a container made ahead waits for its call; an
// older one is removed, not used.
const aheadMaxAge = 2 * time.Minute

// aheadWait is how long a call waits for its container still being made
// ahead (about 0.1 s normally) before it makes its own: a service that
// hangs costs the call no more than this.
const aheadWait = time.Second

// aheadMaxKeys is how many kinds of call (tool and mounts) have a
// container waiting at once; making one more removes the oldest.
const aheadMaxKeys = 4

// ahead is one container made ahead, or being made.
type ahead struct {
	key  string
	ids  []objID // the mount sources as the call before it checked them
	done chan struct{}
	// Set, under the pool's lock, as done is closed.
	id   string          // "" if it could not be made
	conn context.Context // its connection to the service, for its removal
	made time.Time
	// abandoned, under the pool's lock: taken out of the pool before it
	// was made, and to be removed by its maker.
	abandoned bool
}

// aheadPool holds the containers made ahead, at most one per key.
type aheadPool struct {
	mu     sync.Mutex
	byKey  map[string]*ahead
	closed bool
	// making counts the containers being made; Add happens only under mu
	// and never after closed is set, so Close's Wait never overlaps one.
	making sync.WaitGroup
}

// aheadKey is what a call's container depends on: the tool and the mounts,
// in order. ok is false for a call whose container is never made ahead.
func (r *Runtime) aheadKey(c container) (key string, ok bool) {
	if r.aheadOff.Load() || r.cfg.UserNS == "auto" || c.egress != "" || c.ca != "" || c.secretFile {
		return "", false
	}
	// Quoted, so that no path can pass for another's end and the next's
	// start.
	var b strings.Builder
	b.WriteString(strconv.Quote(c.tool))
	for _, m := range c.mounts {
		fmt.Fprintf(&b, " %q %t", m.Path, m.Writable)
	}
	return b.String(), true
}

// sourceIDs are the held sources' objects, in mount order.
func (h heldSources) sourceIDs() []objID {
	ids := make([]objID, 0, len(h))
	for _, s := range h {
		ids = append(ids, s.id)
	}
	return ids
}

// takeAhead returns the id of a container made ahead for key whose mount
// sources were the objects ids, and which no other call has taken; "" if
// there is none. A container it finds that cannot serve (too old, or made
// for other objects) is removed. It waits for one still being made, for
// at most aheadWait.
func (r *Runtime) takeAhead(ctx context.Context, key string, ids []objID) string {
	p := &r.ahead
	p.mu.Lock()
	a := p.byKey[key]
	delete(p.byKey, key)
	p.mu.Unlock()
	if a == nil {
		return ""
	}
	if ctx.Err() != nil {
		r.abandon(a)
		return ""
	}
	wait := time.NewTimer(aheadWait)
	defer wait.Stop()
	select {
	case <-a.done:
	case <-wait.C:
		r.abandon(a)
		return ""
	case <-ctx.Done():
		r.abandon(a)
		return ""
	}
	if a.id == "" {
		return ""
	}
	if time.Since(a.made) > aheadMaxAge || !slices.Equal(a.ids, ids) {
		r.dropAhead(a)
		return ""
	}
	return a.id
}

// makeAhead starts making a container for the next call like c, whose
// mount sources were the objects ids, unless one for key waits already.
// Once the container is initialised, and its mounts made, s's sources are
// checked again: if they are no longer those objects the container is
// removed. (If they changed and changed back meanwhile, the mounts may be
// another object's; the toolkit finds that out and refuses to run, as it
// does for a fresh container: the call fails, closed.)
func (r *Runtime) makeAhead(key string, c container, ids []objID, s *runner.RunSpec) {
	p := &r.ahead
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.byKey[key] != nil {
		return
	}
	if p.byKey == nil {
		p.byKey = map[string]*ahead{}
	}
	for len(p.byKey) >= aheadMaxKeys {
		oldest := ""
		for k, a := range p.byKey {
			if oldest == "" || a.madeBefore(p.byKey[oldest]) {
				oldest = k
			}
		}
		a := p.byKey[oldest]
		delete(p.byKey, oldest)
		r.abandonLocked(a)
	}
	a := &ahead{key: key, ids: ids, done: make(chan struct{})}
	p.byKey[key] = a
	p.making.Go(func() {
		id, conn := r.makeContainer(c)
		if id != "" && !r.sourcesAre(s, ids) {
			r.removeLater(conn, id)
			id = ""
		}
		p.mu.Lock()
		a.id, a.conn, a.made = id, conn, time.Now()
		close(a.done)
		abandoned := a.abandoned
		p.mu.Unlock()
		// Inside making, so that Close, which waits for making before
		// it waits for the removals, never misses this one.
		if abandoned {
			r.dropAhead(a)
			return
		}
		// Nothing is kept that no call can use.
		time.AfterFunc(aheadMaxAge, func() { r.expireAhead(a) })
	})
}

// expireAhead removes a, made aheadMaxAge ago, if no call has taken it.
func (r *Runtime) expireAhead(a *ahead) {
	p := &r.ahead
	p.mu.Lock()
	mine := p.byKey[a.key] == a
	if mine {
		delete(p.byKey, a.key)
	}
	p.mu.Unlock()
	if mine {
		r.dropAhead(a)
	}
}

// sourcesAre says whether s's mount sources are still the objects ids.
func (r *Runtime) sourcesAre(s *runner.RunSpec, ids []objID) bool {
	held, err := openSources(s, r.protectedPaths())
	if err != nil {
		return false
	}
	defer held.Close()
	return slices.Equal(held.sourceIDs(), ids)
}

// abandon gives up a, taken from the pool: removed now if it is made,
// else by its maker once it is.
func (r *Runtime) abandon(a *ahead) {
	r.ahead.mu.Lock()
	defer r.ahead.mu.Unlock()
	r.abandonLocked(a)
}

// abandonLocked is abandon with the pool's lock held.
func (r *Runtime) abandonLocked(a *ahead) {
	select {
	case <-a.done:
		r.dropAhead(a)
	default:
		a.abandoned = true
	}
}

// madeBefore orders containers by when they were asked for: one still being
// made counts as the newest.
func (a *ahead) madeBefore(b *ahead) bool {
	select {
	case <-a.done:
	default:
		return false
	}
	select {
	case <-b.done:
	default:
		return true
	}
	return a.made.Before(b.made)
}

// makeContainer creates and initialises (`runc create`) a container like
// c, under a name of its own and with no call label, and returns its id,
// or "" when that failed (logged; whatever was made is removed).
func (r *Runtime) makeContainer(c container) (string, context.Context) {
	// The connection is unbounded: the container's removal uses it later.
	conn, err := r.connect(context.Background())
	if err != nil {
		fmt.Fprintf(r.log, "podman: cannot make a tool container ahead: %v\n", err)
		return "", nil
	}
	ctx, cancel := context.WithTimeout(conn, removeTimeout)
	defer cancel()
	c.name, c.call = newName(), ""
	s := specFor(r.cfg, c)
	// Podman's backstop counts from the init (conmon's start), so it
	// allows for the wait as well; brokerd's own limit is still the call's.
	s.Timeout += uint(aheadMaxAge / time.Second)
	created, err := containers.CreateWithSpec(ctx, s, nil)
	if err == nil {
		err = containers.ContainerInit(ctx, created.ID, nil)
	}
	if err != nil {
		fmt.Fprintf(r.log, "podman: cannot make a tool container ahead: %v\n", err)
		if rerr := remove(ctx, c.name); rerr != nil {
			fmt.Fprintf(r.log, "podman: removing tool container %s: %v; %s\n", c.name, rerr, runbook.See("tool-container-not-removed"))
		}
		return "", nil
	}
	return created.ID, conn
}

// dropAhead removes a container made ahead that no call will use.
func (r *Runtime) dropAhead(a *ahead) {
	if a.id != "" {
		r.removeLater(a.conn, a.id)
	}
}

// closeAhead stops making containers ahead and removes those that wait;
// the removals join the ones Close waits for.
func (r *Runtime) closeAhead() {
	p := &r.ahead
	p.mu.Lock()
	p.closed = true
	waiting := p.byKey
	p.byKey = nil
	p.mu.Unlock()
	p.making.Wait()
	for _, a := range waiting {
		r.dropAhead(a)
	}
}
