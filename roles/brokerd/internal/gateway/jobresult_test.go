package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/gateway/gatewaytest"
	"boxmaker/wire"
)

func jobResult(t *testing.T, content string) wire.JobResult {
	t.Helper()
	sess, err := wire.NewSessionID("job-morning-digest-1789632300000")
	if err != nil {
		t.Fatal(err)
	}
	return wire.JobResult{Job: "morning-digest", Session: sess, Status: wire.JobOK, Content: content}
}

// jobResults are the job_results the stand-in received.
func jobResults(g *gatewaytest.Gatewayd) []wire.JobResult {
	var out []wire.JobResult
	for _, m := range g.Got() {
		if r, ok := m.(wire.JobResult); ok {
			out = append(out, r)
		}
	}
	return out
}

// TestPostJobResult: the result goes to gatewayd as sent, on a connection
// of its own, and the post gatewayd names is returned; a result at the
// content bound goes too.
func TestPostJobResult(t *testing.T) {
	r, g := newRig(t, true)
	for _, res := range []wire.JobResult{
		jobResult(t, "Three new mails."),
		{Job: "backup", Session: jobResult(t, "").Session, Status: wire.JobFailed, Content: "the model server is unavailable"},
		jobResult(t, strings.Repeat("\x01", wire.MaxJobResultContent)),
	} {
		post, err := r.c.PostJobResult(context.Background(), res)
		if err != nil || post != gatewaytest.JobPost {
			t.Fatalf("PostJobResult = %q, %v; want %q", post, err, gatewaytest.JobPost)
		}
		got := jobResults(g)
		if last := got[len(got)-1]; last != res {
			t.Fatalf("gatewayd got %+v; want %+v", last, res)
		}
	}
}

// TestPostJobResultRefusals: what brokerd must not send is never sent, and
// whatever gatewayd answers other than one job_result_posted naming a post
// is an error that says what it was.
func TestPostJobResultRefusals(t *testing.T) {
	r, g := newRig(t, true)
	big := jobResult(t, strings.Repeat("x", wire.MaxJobResultContent+1))
	if _, err := r.c.PostJobResult(context.Background(), big); !errors.Is(err, wire.ErrJobResultTooLarge) {
		t.Fatalf("oversize: %v; want ErrJobResultTooLarge", err)
	}
	badName := jobResult(t, "hi")
	badName.Job = "../etc"
	if _, err := r.c.PostJobResult(context.Background(), badName); !errors.Is(err, wire.ErrInvalidValue) {
		t.Fatalf("bad job name: %v; want ErrInvalidValue", err)
	}
	if got := jobResults(g); len(got) != 0 {
		t.Fatalf("gatewayd was sent %+v", got)
	}
	for _, c := range []struct {
		name  string
		reply wire.Message
		want  string // in the error
		kind  any    // the error type in the chain
	}{
		{"error answer", wire.WireError{Code: wire.Internal, Detail: "cannot post the job's result on Mattermost: 503"},
			"gatewayd answered internal: cannot post the job's result on Mattermost: 503", new(*refusedError)},
		{"ok instead", wire.OK{}, "answered job_result with ok, not job_result_posted", new(*invalidError)},
		{"not a post id", wire.JobResultPosted{Post: "NOT-A-POST"}, `names "NOT-A-POST", not a Mattermost post`, new(*invalidError)},
	} {
		g.SetReply(func(m wire.Message) wire.Message {
			if _, ok := m.(wire.JobResult); ok {
				return c.reply
			}
			return nil
		})
		post, err := r.c.PostJobResult(context.Background(), jobResult(t, "hi"))
		if err == nil || post != "" || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "job morning-digest") {
			t.Fatalf("%s: %q, %v; want an error with %q", c.name, post, err, c.want)
		}
		if !errors.As(err, c.kind) {
			t.Fatalf("%s: %v is not a %T", c.name, err, c.kind)
		}
	}
}

// TestPostJobResultCancel: a gatewayd that does not answer holds
// PostJobResult only until ctx ends, or the client is closed.
func TestPostJobResultCancel(t *testing.T) {
	r, g := newRig(t, true)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) }) // before the stand-in's Close, which waits for it
	g.SetReply(func(m wire.Message) wire.Message {
		if _, ok := m.(wire.JobResult); ok {
			<-hold
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.c.PostJobResult(ctx, jobResult(t, "hi"))
		done <- err
	}()
	isJob := func(m wire.Message) bool { _, ok := m.(wire.JobResult); return ok }
	_, first := g.Wait(t, 0, "job_result", isJob)
	select {
	case err := <-done:
		t.Fatalf("PostJobResult returned %v before gatewayd answered", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v; want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("PostJobResult did not return after ctx ended")
	}
	// A deadline, and Close, end it the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	if _, err := r.c.PostJobResult(dctx, jobResult(t, "hi")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the deadline: %v; want context.DeadlineExceeded", err)
	}
	go func() {
		_, err := r.c.PostJobResult(context.Background(), jobResult(t, "hi"))
		done <- err
	}()
	_, second := g.Wait(t, first+1, "a second job_result", isJob)
	g.Wait(t, second+1, "a third job_result", isJob)
	r.c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after Close: %v; want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("PostJobResult did not return after Close")
	}
}

// TestPostJobResultUnreachable: no gatewayd is an error at once, and no
// retry.
func TestPostJobResultUnreachable(t *testing.T) {
	r, _ := newRig(t, false)
	start := time.Now()
	if _, err := r.c.PostJobResult(context.Background(), jobResult(t, "hi")); err == nil || !strings.Contains(err.Error(), r.sock) {
		t.Fatalf("no gatewayd: %v; want an error naming the socket", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v: it waited or retried", d)
	}
}
