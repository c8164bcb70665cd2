package gateway

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"boxmaker/roles/brokerd/internal/approvals"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// MaxReason is the longest refusal reason, in bytes, an owner's answer may
// carry.
const MaxReason = 500

// request sends req and waits on its connection for the owner's answer,
// until ctx ends (the approval ended some other way, or brokerd stops). A
// connection that fails or ends without a valid answer is made again after
// a wait, from RetryMin up to RetryMax, and the request sent again:
// gatewayd reuses its post for the same approval.
func (c *Client) request(ctx context.Context, req wire.ApprovalRequest) {
	b := c.newBackoff()
	for {
		answered, posted := c.attempt(ctx, req)
		if answered || ctx.Err() != nil {
			return
		}
		if posted {
			b.reset()
		}
		if !b.wait(ctx) {
			return
		}
	}
}

// attempt is one connection for req: answered once an owner's valid
// answer has been given to the table, posted if gatewayd said it posted
// the approval.
func (c *Client) attempt(ctx context.Context, req wire.ApprovalRequest) (answered, posted bool) {
	epoch := c.epoch()
	conn, closeConn, err := c.dial(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.tooLarge(ctx, req)
				return false, false
			}
			c.unreachable(err)
		}
		return false, false
	}
	defer closeConn()
	var post *string
	for {
		env, err := wire.ReadEnvelope(conn)
		if ctx.Err() != nil {
			return false, post != nil
		}
		if err != nil {
			err = readError(req.Kind(), err)
			var inv *invalidError
			if !errors.As(err, &inv) {
				err = fmt.Errorf("the connection of approval %d ended while it is pending: %w", req.Approval, err)
			}
			c.problem(err)
			return false, post != nil
		}
		switch m := env.Msg.(type) {
		case wire.ApprovalPosted:
			if env.Final || env.ID != requestID || !wire.ValidMattermostID(m.Post) {
				c.invalid(fmt.Sprintf("approval %d: an approval_posted that is not one non-final reply naming a Mattermost post (id %d, final %t, post %q)",
					req.Approval, env.ID, env.Final, m.Post))
				return false, post != nil
			}
			p := m.Post
			post = &p
			c.reached(epoch)
			c.tookHead(req.Head)
			c.o.Log(fmt.Sprintf("brokerd: approval %d is posted on Mattermost as post %s", req.Approval, p))
			continue
		case wire.OwnerAnswer:
			if why := checkAnswer(env, m, post); why != "" {
				c.invalid(fmt.Sprintf("approval %d: an owner_answer %s; the approval still waits", req.Approval, why))
				return false, post != nil
			}
			c.reached(epoch)
			c.answer(req.Approval, m)
			return true, true
		case wire.WireError:
			c.unreachable(fmt.Errorf("approval %d: %w", req.Approval, &refusedError{m}))
			return false, post != nil
		}
		c.invalid(fmt.Sprintf("approval %d: a %s frame on an approval's connection", req.Approval, env.Msg.Kind()))
		return false, post != nil
	}
}

// checkAnswer says what is wrong with an owner's answer, or "": it must be
// the final reply to the request, approved or refused (expired is
// brokerd's word, never an owner's), by and post shaped like Mattermost
// ids, the post the one gatewayd said it posted (when it said so on this
// connection), and a reason printable on one line and at most MaxReason
// bytes.
func checkAnswer(env wire.Envelope, m wire.OwnerAnswer, posted *string) string {
	switch {
	case !env.Final || env.ID != requestID:
		return fmt.Sprintf("that is not the final reply to the request (id %d, final %t)", env.ID, env.Final)
	case m.Answer != wire.Approved && m.Answer != wire.Refused:
		return fmt.Sprintf("whose answer is %s, not approved or refused", m.Answer)
	case !wire.ValidMattermostID(m.By):
		return fmt.Sprintf("whose by %q is not a Mattermost user id", m.By)
	case !wire.ValidMattermostID(m.Post):
		return fmt.Sprintf("whose post %q is not a Mattermost post id", m.Post)
	case posted != nil && m.Post != *posted:
		return fmt.Sprintf("on post %s, not on the approval's post %s", m.Post, *posted)
	case m.Reason != nil && len(*m.Reason) > MaxReason:
		return fmt.Sprintf("whose reason is %d bytes, more than %d", len(*m.Reason), MaxReason)
	case m.Reason != nil && !printable(*m.Reason):
		return fmt.Sprintf("whose reason is not printable text on one line: %s", *m.Reason)
	}
	return ""
}

// printable says whether s is UTF-8 made only of visible characters and
// the plain space: no control (newlines included), format or bidirectional
// character, no other space, nothing that shows as nothing. It is what
// wire.Printable shows as itself, but for backslash and brace, which are
// harmless text here.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !wire.Shown(r) {
			return false
		}
	}
	return true
}

// answer gives a valid owner's answer to the table, exactly as bxctl's
// approve or refuse does, recording who gave it and on which post. The
// call re-decides and records; an approval that already ended (it expired,
// or bxctl answered first) is not changed.
func (c *Client) answer(id uint64, m wire.OwnerAnswer) {
	post := m.Post
	who := approvals.Who{By: m.By, Post: &post}
	var err error
	if m.Answer == wire.Approved {
		_, err = c.o.Approvals.Approve(id, who, c.o.Now())
	} else {
		var reason *string
		if m.Reason != nil {
			r := *m.Reason
			reason = &r
		}
		_, err = c.o.Approvals.Refuse(id, who, reason, c.o.Now())
	}
	if err != nil {
		c.o.Log(fmt.Sprintf("brokerd: approval %d had already ended when %s %s it on Mattermost (post %s); the answer changes nothing",
			id, m.By, m.Answer, m.Post))
		return
	}
	c.o.Log(fmt.Sprintf("brokerd: approval %d %s on Mattermost by %s (post %s)", id, m.Answer, m.By, m.Post))
}

// tooLarge logs an approval that does not fit in one frame (its arguments
// can be nearly a frame already): it is never sent, and waits for bxctl.
func (c *Client) tooLarge(ctx context.Context, req wire.ApprovalRequest) {
	c.o.Log(fmt.Sprintf("brokerd: approval %d is too large to send to gatewayd in one frame (1 MiB) and is not posted on Mattermost; answer it with `bxctl approve %d` or `bxctl refuse %d`",
		req.Approval, req.Approval, req.Approval), runbook.See("gatewayd-approval-too-large"))
	<-ctx.Done()
}
