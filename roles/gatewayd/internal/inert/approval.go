package inert

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// MaxPostRunes is Mattermost's limit on a post's message, in characters
// (runes): the server refuses a longer one.
const MaxPostRunes = 16383

// endedReserve is what an approval post keeps free for the outcome line
// Ended adds: a username and a refusal's reason of up to 500 bytes, in code.
const endedReserve = 1024

// valueRunes caps one value shown in a post (a tool, a grant, a session, a
// username): the arguments are what may be long, and they get the room.
const valueRunes = 200

// Approval is the text of an approval post (issue 14, point 5).
type Approval struct {
	ID        uint64
	Tool      string
	Arguments string
	Grant     string
	Taint     string
	Session   string
	Expires   time.Time
	Digest    string // the digest's 16-hex prefix (wire.DigestPrefix)
	HeadSeq   uint64
	HeadHash  string
}

// Text is the approval post: what is asked, the arguments as data in a
// fence, the digest prefix to compare with bxctl approvals, the expiry, how
// to answer, and the audit head. Every value from the call goes through Code
// or Fence. Arguments too long for one post are shown by their first and
// last parts; the post stays endedReserve under MaxPostRunes, so Ended fits.
func (a Approval) Text() string {
	head := fmt.Sprintf("🔐 Approval %d: the agent asks to run a tool, and it waits for your answer.\n"+
		"tool %s · grant %s · taint %s · session %s\n"+
		"arguments (%d bytes):",
		a.ID, value(a.Tool), value(a.Grant), value(a.Taint), value(a.Session), len(a.Arguments))
	how := fmt.Sprintf("To approve, react with 👍 or ✅; to refuse, react with 👎 or ❌. "+
		"Or reply in this post's thread with `approve`, or with `refuse` and a reason. "+
		"Or run `bxctl approve %d` or `bxctl refuse %d` on the host.", a.ID, a.ID)
	tail := fmt.Sprintf("digest %s — compare with bxctl approvals\n"+
		"expires %s\n%s\naudit head %d:%s",
		hexOrCode(a.Digest, 16), a.Expires.UTC().Format("2006-01-02 15:04:05 UTC"), how, a.HeadSeq, hexOrCode(a.HeadHash, 64))
	room := MaxPostRunes - endedReserve - utf8.RuneCountInString(head+tail) - len("\n\n\n\n")
	return head + "\n\n" + arguments(a.Arguments, room) + "\n\n" + tail
}

// value shows one value of the call as inline code, cut to valueRunes.
func value(s string) string { return Code(cutRunes(s, valueRunes)) }

// hexOrCode shows brokerd's hex (a digest prefix, a hash) as it is, and
// anything that is not n lowercase hex digits as inline code.
func hexOrCode(s string, n int) string {
	if len(s) != n {
		return Code(s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return Code(s)
		}
	}
	return s
}

// arguments fences args, or, when that is more than room runes, its first
// and last parts in two fences with a line between saying what is left out.
func arguments(args string, room int) string {
	whole := Fence(args)
	if utf8.RuneCountInString(whole) <= room {
		return whole
	}
	rs := []rune(args)
	for keep := max(0, min(len(rs)/2, room/2-100)); ; keep = keep * 9 / 10 {
		head, tail := string(rs[:keep]), string(rs[len(rs)-keep:])
		left := len(args) - len(head) - len(tail)
		s := Fence(head) + "\n\n" +
			fmt.Sprintf("(… %d bytes not shown here: the whole arguments are in bxctl approvals …)", left) +
			"\n\n" + Fence(tail)
		if utf8.RuneCountInString(s) <= room || keep == 0 {
			return s
		}
	}
}

// Via is where an approval's answer came from.
type Via uint8

const (
	// ViaNone: nobody answered (expired, abandoned).
	ViaNone Via = iota
	// ViaMattermost: an owner's reaction or reply on the approval post.
	ViaMattermost
	// ViaBxctl: bxctl approve or refuse on the host.
	ViaBxctl
)

// Outcome is how an approval ended, for Ended.
type Outcome struct {
	// End is how brokerd says it ended; not read when Unknown.
	End wire.ApprovalEnd
	Via Via
	// Username is who answered on Mattermost (their username, or their
	// user id when it could not be looked up).
	Username string
	// Reason is a refusal's reason as its author wrote it; may be empty.
	Reason string
	// Denied is set when the call was approved but brokerd's re-decision
	// denied it (a grant changed, the taint rose): the call did not run.
	Denied *wire.DenyReason
	// Unknown: the brokerd that asked has restarted, and approvals do not
	// survive a restart: an answer given on the post (before or after) is
	// not counted.
	Unknown bool
}

// OutcomeOf reads brokerd's approval_ended: By is "bxctl" or the Mattermost
// user id of the owner who answered, whose username gatewayd passes (the id
// is shown when username is empty). Denied counts only for an approval: for
// a refusal or an expiry it is only the record's reason.
func OutcomeOf(e wire.ApprovalEnded, username string) Outcome {
	o := Outcome{End: e.End}
	if e.By != nil {
		if *e.By == "bxctl" {
			o.Via = ViaBxctl
		} else {
			o.Via, o.Username = ViaMattermost, username
			if username == "" {
				o.Username = *e.By
			}
		}
	}
	if e.Reason != nil {
		o.Reason = *e.Reason
	}
	if e.End == wire.EndApproved {
		o.Denied = e.Denied
	}
	return o
}

// Ended is the text an approval post is edited to when the approval ends:
// the original text, then a last line saying the outcome.
func Ended(original string, o Outcome) string {
	return strings.TrimRight(original, "\n") + "\n\n" + o.line()
}

// line is the outcome in one line.
func (o Outcome) line() string {
	if o.Unknown {
		return "❓ Unknown to brokerd: it restarted, and approvals do not survive a restart, so an answer here is not counted; if the agent asks again, that is a new approval."
	}
	who := "on Mattermost"
	switch o.Via {
	case ViaMattermost:
		who = "on Mattermost by " + value(cutRunes(o.Username, 64))
	case ViaBxctl:
		who = "with bxctl"
	}
	switch o.End {
	case wire.EndApproved:
		if o.Denied != nil {
			return fmt.Sprintf("⛔ Approved %s, but the re-decision denied the call: %s. It did not run.", who, Code(o.Denied.String()))
		}
		return fmt.Sprintf("✅ Approved %s: the call ran.", who)
	case wire.EndRefused:
		if o.Reason != "" {
			return fmt.Sprintf("❌ Refused %s (reason: %s).", who, Code(cutRunes(o.Reason, 500)))
		}
		return fmt.Sprintf("❌ Refused %s.", who)
	case wire.EndExpired:
		return "⌛ Expired: nobody answered in time, so the call was denied."
	case wire.EndAbandoned:
		return "🚫 Abandoned: the call's session ended before an answer, so the call did not run."
	}
	return "Ended (" + Code(o.End.String()) + ")."
}
