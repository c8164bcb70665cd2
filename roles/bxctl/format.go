package bxctl

import (
	"fmt"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// sessionWidth is the most of a session id the listing shows: ids are up
// to 64 characters and start with their kind and time ("chat-1758…").
const sessionWidth = 10

// shortSession returns id if it is at most sessionWidth characters, else
// its first sessionWidth-1 characters and "…", so the result is never wider
// than sessionWidth. Session ids are ASCII ([a-z0-9-]).
func shortSession(id string) string {
	if len(id) <= sessionWidth {
		return id
	}
	return id[:sessionWidth-1] + "…"
}

// span writes a non-negative duration in one unit, rounded down: seconds
// under a minute ("42 s"), minutes under an hour ("13 min"), hours under
// two days ("5 h"), else days ("3 d"). Rounding down never promises the
// owner more time to answer than is left.
func span(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Minute:
		return fmt.Sprintf("%d s", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return fmt.Sprintf("%d d", d/(24*time.Hour))
}

// approvalBlock is the two lines that show one pending approval (M3a §9),
// the first ending with the arguments' length in bytes (issue 12) and the
// digest of the call (issue 14):
//
//	41  2 min ago  expires in 13 min  session chat-1758…  grant shell-scratch  taint private  arguments 78 bytes  digest 3f0c8e21a9d4b756
//	    shell {"command": "rm -rf /home/kyle/scratch/build", "cwd": "/home/kyle/scratch"}
//
// The arguments are shown as the model wrote them, as data (wire.Printable):
// the length is of what was sent, so an owner can tell when what is shown is
// short of it (escapes and runs written with their count). The digest is
// the one gatewayd shows on the approval's Mattermost post, so the owner
// can see that both name the same call.
func approvalBlock(p wire.PendingApproval, now time.Time) string {
	expires := "expires now"
	if left := p.Expires.Time().Sub(now); left > 0 {
		expires = "expires in " + span(left)
	}
	return fmt.Sprintf("%d  %s ago  %s  session %s  grant %s  taint %s  arguments %d bytes  digest %s\n    %s %s\n",
		p.Approval, span(now.Sub(p.Created.Time())), expires, shortSession(p.Session.String()),
		wire.Printable(p.Grant), p.Taint, len(p.Arguments), callDigest(p), wire.Printable(p.Tool), wire.Printable(p.Arguments))
}

// callDigest is the prefix of the digest of the exact call (its tool,
// arguments, grant and taint, as brokerd holds them) that gatewayd posts.
func callDigest(p wire.PendingApproval) string {
	return wire.DigestPrefix(wire.CallDigest(p.Tool, p.Arguments, p.Grant, p.Taint))
}

// summaryEnds is how many characters of each end of long arguments are
// shown again beside the question.
const summaryEnds = 60

// longArguments is, for arguments too long to read at a glance, one line
// that shows again their tool, length, grant, the call's digest and both
// ends, printed just before "approve N? [y/N]": the block above may have
// scrolled out of sight, and padding or plain length must not leave the
// owner answering with only the harmless tail of a command on screen
// (issue 12). Short arguments get "", the block is enough.
func longArguments(p wire.PendingApproval) string {
	if utf8.RuneCountInString(p.Arguments) <= 2*summaryEnds+20 {
		return ""
	}
	head, tail := ends(p.Arguments, summaryEnds)
	return fmt.Sprintf("approval %d: %s under grant %s, arguments %d bytes, digest %s: %s … %s\n",
		p.Approval, wire.Printable(p.Tool), wire.Printable(p.Grant), len(p.Arguments), callDigest(p), head, tail)
}

// ends is the first and last n characters of s as Printable shows them,
// cut on character boundaries of s itself, so no escape is cut in two.
func ends(s string, n int) (head, tail string) {
	runes := []rune(s)
	if len(runes) <= 2*n {
		return wire.Printable(s), ""
	}
	return wire.Printable(string(runes[:n])), wire.Printable(string(runes[len(runes)-n:]))
}
