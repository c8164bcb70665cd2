package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"boxmaker/roles/gatewayd/internal/inert"
	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/roles/gatewayd/internal/state"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// gateway.sock (wire/gateway.go): brokerd is the client. Every request is
// one frame on its own connection; an approval_request's connection stays
// open until the owner answers or brokerd closes it.

// requestTimeout bounds the wait for a connection's request frame.
const requestTimeout = 30 * time.Second

// acceptRetry spaces the tries of an accept that failed.
const acceptRetry = 100 * time.Millisecond

// LoadApprovals puts the approvals of the state file that have not ended
// back in the table, so that brokerd asking again after gatewayd restarted
// finds its post, and the answer written for it, if any, held for it.
func (b *Bridge) LoadApprovals() {
	r := b.approvals
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range b.o.State.Approvals() {
		if a.Ended {
			continue
		}
		p := &pending{id: a.ID, broker: a.Broker, post: a.Post, channel: a.Channel, expires: a.Expires, answer: a.Answer}
		r.byID[a.ID] = p
		r.byPost[a.Post] = p
	}
}

// ServeGateway answers brokerd's connections on ln until ctx ends, then
// closes ln and waits for every connection's handler.
func (b *Bridge) ServeGateway(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer wg.Wait()
	failing, full := false, false
	slots := make(chan struct{}, b.o.MaxConnections)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("gateway.sock: %w", err)
			}
			// Out of file descriptors, say (brokerd holds one connection
			// per waiting approval): wait and try again rather than stop
			// serving; logged once per run of failures.
			if !failing {
				b.log("gateway.sock: %v; trying again", err)
			}
			failing = true
			select {
			case <-time.After(acceptRetry):
			case <-ctx.Done():
			}
			continue
		}
		failing = false
		select {
		case slots <- struct{}{}:
			full = false
		default:
			if !full {
				b.log("gateway.sock: %d connections are open already; refusing more until one closes", cap(slots))
			}
			full = true
			b.refuseConn(conn)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			defer conn.Close()
			unstop := context.AfterFunc(ctx, func() { conn.Close() })
			defer unstop()
			b.serveConn(ctx, conn)
		}()
	}
}

// refuseConn answers a connection over the bound with an error, without
// reading its request (so as id 0), and closes it; the write cannot block
// the accepting loop for long.
func (b *Bridge) refuseConn(conn net.Conn) {
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(time.Second))
	wire.WriteEnvelope(conn, wire.Reply(0, true, wire.WireError{Code: wire.Internal,
		Detail: fmt.Sprintf("gatewayd has %d connections open already; try again later", b.o.MaxConnections)}))
}

func (b *Bridge) serveConn(ctx context.Context, conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(requestTimeout))
	env, err := wire.ReadRequest(conn)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			b.log("gateway.sock: refused a request that cannot be read: %v", err)
			wire.WriteEnvelope(conn, wire.Reply(env.ID, true, wire.WireError{Code: wire.ErrorCodeFor(err), Detail: err.Error()}))
		}
		return
	}
	conn.SetReadDeadline(time.Time{})
	answer := func(final bool, m wire.Message) error {
		conn.SetWriteDeadline(time.Now().Add(requestTimeout))
		return wire.WriteEnvelope(conn, wire.Reply(env.ID, final, m))
	}
	switch m := env.Msg.(type) {
	case wire.BrokerStart:
		b.brokerStarted(ctx, m.Broker)
		if m.Head != nil {
			b.postHead(ctx, "brokerd started", *m.Head)
		}
		answer(true, wire.OK{})
	case wire.AuditHead:
		if err := b.postHead(ctx, "the audit log's head", m); err != nil {
			answer(true, wire.WireError{Code: wire.Internal, Detail: "cannot post the audit head on Mattermost: " + err.Error()})
			return
		}
		answer(true, wire.OK{})
	case wire.ApprovalRequest:
		b.serveApproval(ctx, conn, m, answer)
	case wire.JobResult:
		b.serveJobResult(ctx, m, answer)
	case wire.ApprovalEnded:
		if err := b.ended(ctx, m); err != nil {
			answer(true, wire.WireError{Code: wire.NoSuchApproval, Detail: err.Error()})
			return
		}
		answer(true, wire.OK{})
	default:
		answer(true, wire.WireError{Code: wire.Forbidden, Detail: fmt.Sprintf("gateway.sock does not accept %s", env.Msg.Kind())})
	}
}

// validBroker is the shape of a brokerd instance id.
func validBroker(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// brokerStarted notes the brokerd instance that spoke; when it is a new
// one, the approvals of the one before are gone (approvals do not survive
// a restart), and their posts say so.
func (b *Bridge) brokerStarted(ctx context.Context, broker string) {
	r := b.approvals
	r.mu.Lock()
	if r.broker == broker || !validBroker(broker) {
		r.mu.Unlock()
		return
	}
	r.broker = broker
	type goneOne struct {
		id   uint64
		post string
		held bool // answered, and the answer not yet passed on
	}
	var gone []goneOne
	for _, p := range r.byID {
		if p.broker != broker && !p.ended && !p.gone {
			p.gone = true
			// Read here, under the lock: a connection of the old
			// instance may be passing the answer on right now.
			gone = append(gone, goneOne{p.id, p.post, p.answer != nil && !p.sent})
		}
	}
	r.mu.Unlock()
	for _, g := range gone {
		// An approval that nobody answered is gone too: its post must not
		// go on asking for an answer that can no longer count.
		if g.held {
			b.log("approval %d: the answer given on post %s was not counted: brokerd restarted, and approvals do not survive a restart", g.id, g.post)
		}
		b.finish(ctx, g.id, inert.Outcome{Unknown: true})
	}
}

// postHead posts the audit head in the first owner's channel.
func (b *Bridge) postHead(ctx context.Context, what string, h wire.AuditHead) error {
	head := strconv.FormatUint(h.Seq, 10) + ":" + h.Hash.String()
	text := fmt.Sprintf("🔗 %s: audit head %s\nKeep it: %s checks that the log still holds that record.",
		what, inert.Code(head), inert.Code("bxctl audit verify --head "+head))
	_, err := b.o.MM.CreatePost(ctx, b.firstOwner().Channel, "", text)
	if err != nil {
		b.log("cannot post %s (%d:%s) on Mattermost: %v; %s", what, h.Seq, h.Hash, err, runbook.See("mattermost-unreachable"))
	}
	return err
}

// serveApproval posts approval req (or finds its post, when brokerd asks
// again), then passes the first qualifying answer back on conn.
func (b *Bridge) serveApproval(ctx context.Context, conn net.Conn, req wire.ApprovalRequest, answer func(bool, wire.Message) error) {
	refuse := func(code wire.ErrorCode, why string) {
		b.log("refused approval request %d: %s", req.Approval, why)
		answer(true, wire.WireError{Code: code, Detail: why})
	}
	switch {
	case !validBroker(req.Broker):
		refuse(wire.BadMessage, "broker is not an instance id (32 lowercase hex digits)")
		return
	case wire.CallDigest(req.Tool, req.Arguments, req.Grant, req.Taint) != req.Digest:
		refuse(wire.BadMessage, "digest is not the digest of the call's tool, arguments, grant and taint")
		return
	case wire.TimestampOf(b.o.Now()) >= req.Expires:
		refuse(wire.NoSuchApproval, "the approval has expired; nothing is posted for it")
		return
	}
	b.brokerStarted(ctx, req.Broker)
	post, again, err := b.approvalPost(ctx, req)
	if err != nil {
		refuse(wire.Internal, "cannot post the approval on Mattermost: "+err.Error())
		return
	}
	if err := answer(false, wire.ApprovalPosted{Post: post}); err != nil {
		return
	}
	if again {
		// Answers given while brokerd was away are on the post already.
		b.catchUpApproval(ctx, post)
	}
	deliver, given := b.approvals.attach(req.Approval)
	if given != nil {
		if err := answer(true, *given); err != nil {
			// attach marked it sent: held again, or it would be lost.
			b.approvals.undelivered(req.Approval)
			b.notPassed(req.Approval, err)
		}
		return
	}
	closed := make(chan struct{})
	go func() { // brokerd sends nothing more: a read ends when it closes
		var one [1]byte
		conn.Read(one[:])
		close(closed)
	}()
	select {
	case ans := <-deliver:
		if err := answer(true, ans); err != nil {
			deliver <- ans // not sent: hold it for brokerd's next connection
			b.approvals.detach(req.Approval, deliver)
			b.notPassed(req.Approval, err)
		} else {
			b.approvals.delivered(req.Approval, deliver, ans)
		}
	case <-closed:
		b.approvals.detach(req.Approval, deliver)
	case <-ctx.Done():
		b.approvals.detach(req.Approval, deliver)
	}
	conn.Close() // and the reader above ends before the handler does
	<-closed
}

// notPassed logs an answer that did not reach brokerd.
func (b *Bridge) notPassed(id uint64, err error) {
	b.log("approval %d: the answer could not be passed to brokerd (%v); it is held for brokerd's next request", id, err)
}

// approvalPost returns approval req's post: the one made before when
// brokerd asks again, else a new one in the first owner's channel. again
// says it existed. A request for an approval being posted right now waits
// for that post: two at once make one post.
func (b *Bridge) approvalPost(ctx context.Context, req wire.ApprovalRequest) (post string, again bool, err error) {
	r := b.approvals
	var mine chan struct{}
	for mine == nil {
		r.mu.Lock()
		if p, ok := r.byID[req.Approval]; ok && p.broker == req.Broker && !p.ended && !p.gone {
			r.mu.Unlock()
			return p.post, true, nil
		}
		busy, posting := r.posting[req.Approval]
		if !posting {
			mine = make(chan struct{})
			r.posting[req.Approval] = mine
		}
		r.mu.Unlock()
		if posting {
			select {
			case <-busy:
			case <-ctx.Done():
				return "", false, ctx.Err()
			}
		}
	}
	defer func() {
		r.mu.Lock()
		delete(r.posting, req.Approval)
		r.mu.Unlock()
		close(mine)
	}()
	owner := b.ownerOf(req.Session)
	text := inert.Approval{ID: req.Approval, Tool: req.Tool, Arguments: req.Arguments, Grant: req.Grant,
		Taint: req.Taint.String(), Session: req.Session.String(), Expires: req.Expires.Time(),
		Digest: wire.DigestPrefix(req.Digest), HeadSeq: req.Head.Seq, HeadHash: req.Head.Hash.String()}.Text()
	p, err := b.o.MM.CreatePost(ctx, owner.Channel, "", text)
	if err != nil {
		return "", false, err
	}
	r.add(&pending{id: req.Approval, broker: req.Broker, post: p.ID, channel: owner.Channel, expires: req.Expires}, wire.TimestampOf(b.o.Now()))
	rec := state.Approval{ID: req.Approval, Broker: req.Broker, Post: p.ID, Channel: owner.Channel, Text: text, Expires: req.Expires}
	if err := b.o.State.PutApproval(rec, wire.TimestampOf(b.o.Now())); err != nil {
		b.log("cannot write the state file: approval %d's post %s is known only until gatewayd restarts: %v; %s", req.Approval, p.ID, err, runbook.See("gatewayd-state-damaged"))
	}
	b.log("approval %d posted as %s in channel %s", req.Approval, p.ID, owner.Channel)
	return p.ID, false, nil
}

// ownerOf is the owner whose channel gets the posts of session: the owner
// of the thread that is the session, else the first owner (a session
// started elsewhere, bxctl chat's or a scheduled job's, has no thread).
func (b *Bridge) ownerOf(session wire.SessionID) Owner {
	if t, ok := b.o.State.ThreadOf(session); ok {
		if ow, known := b.owners[t.Owner]; known {
			return ow
		}
	}
	return b.firstOwner()
}

// catchUpApproval reads the reactions on an approval post that brokerd
// asks about again: they may have been given while it was away.
func (b *Bridge) catchUpApproval(ctx context.Context, post string) {
	rs, err := b.o.MM.Reactions(ctx, post)
	if err != nil {
		b.log("reading the reactions on approval post %s: %v", post, err)
		return
	}
	// In the order they were made: the first answer is the one that counts.
	slices.SortStableFunc(rs, func(x, y mm.Reaction) int { return cmp.Compare(x.CreateAt, y.CreateAt) })
	for _, re := range rs {
		b.reaction(re)
	}
}

// ended edits an approval's post to say how it ended.
func (b *Bridge) ended(ctx context.Context, m wire.ApprovalEnded) error {
	name := ""
	if m.By != nil && *m.By != "bxctl" {
		name = b.ownerName(*m.By)
	}
	return b.finish(ctx, m.Approval, inert.OutcomeOf(m, name))
}

// finish marks an approval ended and edits its post with the outcome.
func (b *Bridge) finish(ctx context.Context, id uint64, o inert.Outcome) error {
	r := b.approvals
	r.mu.Lock()
	p, ok := r.byID[id]
	if ok {
		p.ended, p.endedAt = true, wire.TimestampOf(b.o.Now())
		p.deliver = nil
	}
	r.mu.Unlock()
	rec, known := b.o.State.Approval(id)
	if !ok || !known {
		return fmt.Errorf("gatewayd has no post for approval %d", id)
	}
	if _, err := b.o.MM.PatchPost(ctx, rec.Post, inert.Ended(rec.Text, o)); err != nil {
		b.log("cannot edit approval post %s to show how approval %d ended: %v; %s", rec.Post, id, err, runbook.See("mattermost-unreachable"))
	}
	if _, err := b.o.State.EndApproval(id); err != nil {
		b.log("cannot write the state file: %v; %s", err, runbook.See("gatewayd-state-damaged"))
	}
	return nil
}
