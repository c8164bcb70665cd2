package harness_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"

	"boxmaker/internal/fakemm"
	"boxmaker/internal/harness"
)

// BenchmarkReactionToApprovalRecord is issue 14's speed target: the time
// from the owner's reaction event leaving the stand-in Mattermost to
// brokerd's Approval record being synced, as a ratio to one bare 300-byte
// write+fsync on the same disk in the same run (at most 3).
//
// Every role is its own process, so the end is seen from outside: brokerd
// rewrites its audit head file (broker/audit-head) with one pwrite right
// after each commit's sync returns, and nothing else is written between
// the Decision record of a pending call and its Approval record, so the
// first modification of that file after the reaction is the Approval
// record, synced. The start is the event's arrival at a WebSocket client of
// the owner's in this process: the same broadcast gatewayd gets, over the
// same loopback, so the server's own queueing is left out as the issue
// asks ("from the reaction event arriving at gatewayd"); the span from
// fakemm's timestamp, just before it queues the frames, is reported too.
// Each op is one whole turn (a post, the approval, the reaction, the
// container run, the reply); only that span is measured. Run it with
// -benchtime=20x for a median worth reporting.
func BenchmarkReactionToApprovalRecord(b *testing.B) {
	srv, err := fakemm.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	bot, owner := srv.AddUser("boxmaker", true), srv.AddUser("kyle", false)
	dm := srv.DirectChannel(bot.ID, owner.ID)
	h, _ := startWith(b, 120000, &harness.Mattermost{URL: srv.URL(), Token: bot.Token, Owners: []string{owner.ID}})

	headFile := filepath.Join(h.Home, "broker", "audit-head")
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, headFile, unix.IN_MODIFY); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	drain := func() {
		for {
			if _, err := unix.Read(in, buf); err != nil {
				return // EAGAIN: nothing more
			}
		}
	}
	waitModified := func() {
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 30000)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				b.Fatalf("the audit head was not written: %v", err)
			}
			return
		}
	}
	fsyncFile, err := os.Create(filepath.Join(h.Home, "fsync-baseline"))
	if err != nil {
		b.Fatal(err)
	}
	defer fsyncFile.Close()
	line := []byte(strings.Repeat("x", 299) + "\n")

	arrivals := ownerEvents(b, srv, owner)
	var spans, fromServer, fsyncs []time.Duration
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		root := srv.Post(owner.ID, dm, "", "What do my notes say?")
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		ap, err := srv.WaitFor(wctx, func(p fakemm.Post) bool {
			return p.UserID == bot.ID && p.RootID == "" && p.CreateAt > root.CreateAt && strings.Contains(p.Message, "Approval ")
		})
		cancel()
		if err != nil {
			b.Fatalf("no approval post: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // let the Decision record's head write land before draining
		drain()
		queued := srv.React(owner.ID, ap.ID, "+1")
		waitModified()
		end := time.Now()
		var arrived time.Time
		select {
		case arrived = <-arrivals:
		case <-time.After(10 * time.Second):
			b.Fatal("the owner's client never got the reaction")
		}
		spans = append(spans, end.Sub(arrived))
		fromServer = append(fromServer, end.Sub(queued))

		wctx, cancel = context.WithTimeout(ctx, time.Minute)
		_, err = srv.WaitFor(wctx, func(p fakemm.Post) bool {
			return p.RootID == root.ID && p.UserID == bot.ID && strings.Contains(p.Message, "Water the plants")
		})
		cancel()
		if err != nil {
			b.Fatalf("no reply: %v", err)
		}
		// The baseline once the turn is over, when the system is as quiet
		// as it was when the reaction came.
		t0 := time.Now()
		if _, err := fsyncFile.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := fsyncFile.Sync(); err != nil {
			b.Fatal(err)
		}
		fsyncs = append(fsyncs, time.Since(t0))
	}
	s, f := median(spans), median(fsyncs)
	b.ReportMetric(float64(s.Microseconds()), "µs-reaction-to-record/p50")
	b.ReportMetric(float64(median(fromServer))/float64(f), "x-fsync-from-server")
	b.ReportMetric(float64(f.Microseconds()), "µs-fsync/p50")
	b.ReportMetric(float64(s)/float64(f), "x-fsync")
}

// ownerEvents connects a WebSocket client as the owner and sends the
// arrival time of every reaction_added event it gets.
func ownerEvents(b *testing.B, srv *fakemm.Server, owner fakemm.User) <-chan time.Time {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL(), "http")+"/api/v4/websocket", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.CloseNow() })
	auth := `{"seq":1,"action":"authentication_challenge","data":{"token":"` + owner.Token + `"}}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(auth)); err != nil {
		b.Fatal(err)
	}
	out := make(chan time.Time, 16)
	go func() {
		for {
			_, msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if bytes.Contains(msg, []byte(`"event":"reaction_added"`)) || bytes.Contains(msg, []byte(`"event": "reaction_added"`)) {
				out <- time.Now()
			}
		}
	}()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := srv.WaitSockets(wctx, owner.ID, 1); err != nil {
		b.Fatal(err)
	}
	return out
}
