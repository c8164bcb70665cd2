package bridge

import (
	"context"
	"errors"

	"boxmaker/roles/gatewayd/internal/inert"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// serveJobResult posts a scheduled job's result (issue 17) where the
// session's approvals are posted, and answers with the post's id. The post
// is a new one each time: brokerd does not send a result twice, and a
// result is news, not a record to update.
func (b *Bridge) serveJobResult(ctx context.Context, m wire.JobResult, answer func(bool, wire.Message) error) {
	if err := m.Check(); err != nil {
		why := err.Error()
		if errors.Is(err, wire.ErrJobResultTooLarge) {
			why = "the content is larger than a job result may be: " + why
		}
		// The job name is shown quoted: Check may have refused it.
		b.log("refused the result of job %q: %s; nothing is posted; %s", m.Job, why, runbook.See("job-result-not-posted"))
		answer(true, wire.WireError{Code: wire.BadMessage, Detail: why})
		return
	}
	owner := b.ownerOf(m.Session)
	text := inert.JobResult{Job: m.Job, Session: m.Session.String(), Failed: m.Status == wire.JobFailed, Content: m.Content}.Text()
	p, err := b.o.MM.CreatePost(ctx, owner.Channel, "", text)
	if err != nil {
		b.log("cannot post the result of job %s (session %s) on Mattermost: %v; %s", m.Job, m.Session, err, runbook.See("mattermost-unreachable"))
		answer(true, wire.WireError{Code: wire.Internal, Detail: "cannot post the job's result on Mattermost: " + err.Error()})
		return
	}
	b.log("job %s (session %s, %s): result posted as %s in channel %s", m.Job, m.Session, m.Status, p.ID, owner.Channel)
	answer(true, wire.JobResultPosted{Post: p.ID})
}
