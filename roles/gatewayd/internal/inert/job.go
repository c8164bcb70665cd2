package inert

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// JobResult is the post of a scheduled job's result (issue 17): a header
// line of gatewayd's own, then the content as data, rendered exactly as a
// Turn renders the model's text (Text in a block quote, the middle cut by
// cutMiddle when it is too long), so that the same rule holds: every line of
// the model's words has the quote's gutter and gatewayd's lines do not. No
// content can pass for the header, an approval post or a tool line, and
// nothing in it can mention, link or preview.
type JobResult struct {
	Job     string // the job's name
	Session string // the run's session
	Failed  bool   // the run failed: Content is why
	Content string
}

// Text is the post: the header, a blank line and the quoted content, at
// most MaxPostRunes. The header is always whole; a content too long for the
// rest keeps its two ends.
func (j JobResult) Text() string {
	status := "finished"
	if j.Failed {
		status = "failed"
	}
	head := fmt.Sprintf("⏰ Scheduled job %s (session %s): %s", value(j.Job), value(j.Session), status)
	switch {
	case strings.TrimSpace(j.Content) == "" && j.Failed:
		return head + "\n(No reason was given.)"
	case strings.TrimSpace(j.Content) == "":
		return head + "\n(The job's reply was empty.)"
	}
	room := MaxPostRunes - utf8.RuneCountInString(head) - 2
	body := ""
	// As in Turn.Text: a text with more non-space characters than a post
	// can hold cannot fit however it renders, and is not rendered whole.
	if nonSpace(j.Content) <= room {
		body = quote(Text(j.Content))
	}
	if body == "" || utf8.RuneCountInString(body) > room {
		body = cutMiddle(j.Content, room)
	}
	return head + "\n\n" + body
}
