package gateway

import (
	"context"
	"fmt"
	"time"

	"boxmaker/wire"
)

// jobResultTimeout bounds PostJobResult whatever ctx says: gatewayd answers
// once Mattermost has taken the post or failed, within its own request
// timeout (30 s), so a longer silence is a gatewayd that will not answer.
const jobResultTimeout = 2 * time.Minute

// PostJobResult asks gatewayd to post a scheduled job's result to the owner
// on Mattermost (issue 17) and returns the post's id. It is one try on a
// connection of its own, bounded by ctx, by jobResultTimeout and by Close:
// unlike an approval, a result has no later state to converge to, and a
// second try after a lost answer could post it twice, so the caller (the
// job runner) decides what a failure means, and logs it. r is refused
// before anything is sent when it breaks wire.JobResult.Check (content over
// wire.MaxJobResultContent: errors.Is(err, wire.ErrJobResultTooLarge)). An
// error answer from gatewayd (bad_message, or internal when Mattermost
// fails) and any other reply that is not one job_result_posted naming a
// Mattermost post are errors; when ctx ends first, the error wraps
// ctx.Err().
func (c *Client) PostJobResult(ctx context.Context, r wire.JobResult) (post string, err error) {
	if err := r.Check(); err != nil {
		return "", fmt.Errorf("the result of job %q is not sent to gatewayd: %w", r.Job, err)
	}
	ctx, cancel := context.WithTimeout(ctx, jobResultTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel) // Close ends it too
	defer stop()
	fail := func(err error) (string, error) {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return "", fmt.Errorf("the result of job %s was not posted by gatewayd on %s: %w", r.Job, c.o.Socket, err)
	}
	epoch := c.epoch()
	conn, closeConn, err := c.dial(ctx, r)
	if err != nil {
		return fail(err)
	}
	defer closeConn()
	env, err := wire.ReadEnvelope(conn)
	if err != nil {
		return fail(readError(r.Kind(), err))
	}
	if env.ID != requestID || !env.Final {
		return fail(&invalidError{fmt.Sprintf("its answer to job_result is not one final reply to it (id %d, final %t)", env.ID, env.Final)})
	}
	switch m := env.Msg.(type) {
	case wire.JobResultPosted:
		if !wire.ValidMattermostID(m.Post) {
			return fail(&invalidError{fmt.Sprintf("its job_result_posted names %q, not a Mattermost post", m.Post)})
		}
		c.reached(epoch)
		return m.Post, nil
	case wire.WireError:
		return fail(&refusedError{m})
	}
	return fail(&invalidError{fmt.Sprintf("it answered job_result with %s, not job_result_posted", env.Msg.Kind())})
}
