package bxctl

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"boxmaker/wire"
)

// printable returns s as data (M3a §9): every character below U+0020,
// U+007F, and U+0080 to U+009F is printed as \u00XX (ESC, U+001B, among
// them, wherever it is), so nothing the model wrote can move the cursor,
// change colours or hide text. A byte that is not UTF-8 is printed as \xXX.
func printable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

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

// approvalBlock is the two lines that show one pending approval (M3a §9):
//
//	41  2 min ago  expires in 13 min  session chat-1758…  grant shell-scratch  taint private
//	    shell {"command": "rm -rf /home/kyle/scratch/build", "cwd": "/home/kyle/scratch"}
//
// The arguments are shown as the model wrote them, as data.
func approvalBlock(p wire.PendingApproval, now time.Time) string {
	expires := "expires now"
	if left := p.Expires.Time().Sub(now); left > 0 {
		expires = "expires in " + span(left)
	}
	return fmt.Sprintf("%d  %s ago  %s  session %s  grant %s  taint %s\n    %s %s\n",
		p.Approval, span(now.Sub(p.Created.Time())), expires, shortSession(p.Session.String()),
		printable(p.Grant), p.Taint, printable(p.Tool), printable(p.Arguments))
}
