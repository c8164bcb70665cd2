package bxctl

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"net"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// chat speaks the channel protocol on loop.sock (wire/channel.go), the same
// one gatewayd speaks: one say per connection, answered by the turn's
// events. Everything the model or a tool wrote is printed as data.

type chatCmd struct {
	Say         string `placeholder:"TEXT" help:"Send one message, print the turn's events and exit; approvals are listed, not asked."`
	JSON        bool   `name:"json" help:"Print the turn's events as JSON lines; approvals are not asked."`
	Session     string `placeholder:"ID" help:"Continue this session (default: start a new one)."`
	LoopSocket  string `placeholder:"PATH" help:"loopd's socket (default: $BOXMAKER_HOME/run/owner-loop/loop.sock)."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket, to answer approvals (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
}

// turnTimeout bounds one turn; a turn that waits for an approval can take
// as long as the approval's TTL.
const turnTimeout = 30 * time.Minute

func (c *chatCmd) Run(e *env) error {
	ch := &chat{e: e, cmd: e.name + " chat", loop: c.LoopSocket, admin: adminSocket(c.AdminSocket),
		json: c.JSON, ask: c.Say == "" && !c.JSON, in: bufio.NewReader(e.stdin)}
	if ch.loop == "" {
		ch.loop = filepath.Join(defaultHome(), "run", "owner-loop", "loop.sock")
	}
	if c.Session != "" {
		id, err := wire.NewSessionID(c.Session)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", ch.cmd, err)
			return exitCode(2)
		}
		ch.session = &id
	}
	if c.Say != "" {
		return ch.turn(c.Say)
	}
	if c.JSON {
		// --json without --say: one message per line of stdin.
		return ch.lines(false)
	}
	return ch.lines(true)
}

type chat struct {
	e           *env
	cmd         string
	loop, admin string
	json, ask   bool
	in          *bufio.Reader
	session     *wire.SessionID
}

// lines sends each line of stdin as a message until end of input.
func (ch *chat) lines(prompt bool) error {
	var failed bool
	for {
		if prompt {
			fmt.Fprint(ch.e.stderr, "you> ")
		}
		line, err := ch.in.ReadString('\n')
		text := strings.TrimRight(line, "\r\n")
		ch.echo(text)
		if strings.TrimSpace(text) != "" {
			if terr := ch.turn(text); terr != nil {
				if _, ok := terr.(exitCode); !ok {
					return terr
				}
				failed = true
			}
		}
		if err != nil {
			if prompt {
				fmt.Fprintln(ch.e.stderr)
			}
			if failed {
				return exitCode(1)
			}
			return nil
		}
	}
}

// turn says text and prints the turn's events until the final one. A turn
// that ends in failed is exit status 1.
func (ch *chat) turn(text string) error {
	conn, err := net.DialTimeout("unix", ch.loop, dialTimeout)
	if err != nil {
		fmt.Fprintf(ch.e.stderr, "%s: cannot reach loopd at %s: %s\n%s\n", ch.cmd, wire.Printable(ch.loop), wire.Printable(err.Error()), runbook.See("loop-unavailable"))
		return exitCode(1)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(turnTimeout))
	if err := wire.WriteEnvelope(conn, wire.Request(1, wire.Say{Session: ch.session, Text: text})); err != nil {
		return ch.broken(err)
	}
	for {
		env, err := wire.ReadEnvelope(conn)
		if err != nil {
			return ch.broken(err)
		}
		if we, ok := env.Msg.(wire.WireError); ok {
			fmt.Fprintf(ch.e.stderr, "%s: loopd refused the message: %s: %s\n", ch.cmd, we.Code, wire.Printable(we.Detail))
			return exitCode(1)
		}
		ev, ok := env.Msg.(wire.TurnEvent)
		if !ok || env.ID != 1 {
			return ch.broken(fmt.Errorf("an unexpected %s frame", env.Msg.Kind()))
		}
		if err := ch.show(ev); err != nil {
			return err
		}
		if env.Final {
			if _, failed := ev.(wire.TurnFailed); failed {
				return exitCode(1)
			}
			return nil
		}
	}
}

func (ch *chat) broken(err error) error {
	fmt.Fprintf(ch.e.stderr, "%s: the turn broke off: %s\n%s\n", ch.cmd, wire.Printable(err.Error()), runbook.See("loop-unavailable"))
	return exitCode(1)
}

// show prints one event, and answers an approval when asking.
func (ch *chat) show(ev wire.TurnEvent) error {
	if s, ok := ev.(wire.TurnSession); ok {
		ch.session = &s.Session
	}
	if ch.json {
		b, err := wire.Marshal(&ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(ch.e.stdout, "%s\n", b)
		return err
	}
	out := ch.e.stdout
	switch ev := ev.(type) {
	case wire.TurnSession:
		fmt.Fprintf(ch.e.stderr, "[session %s, epoch %d]\n", ev.Session, ev.Epoch)
	case wire.TurnText:
		fmt.Fprintf(out, "%s\n", rows(modelText(ev.Content), ch.cols()))
	case wire.TurnToolCall:
		fmt.Fprintf(out, "%s\n", rows(fmt.Sprintf("tool call %d: %s %s", ev.Call, wire.Printable(ev.Tool), wire.Printable(ev.Arguments)), ch.cols()))
	case wire.TurnToolOutcome:
		fmt.Fprintf(out, "tool call %d ended: %s\n", ev.Call, outcomeText(ev))
	case wire.TurnApprovalPending:
		return ch.approval(ev)
	case wire.TurnAnswerCut:
		// loopd's word from two numbers: nothing the model wrote.
		fmt.Fprintf(ch.e.stderr, "%s\n%s\n", cutText(ev), runbook.See("answer-cut"))
	case wire.TurnReply:
		fmt.Fprintf(out, "%s\n", rows(modelText(ev.Content), ch.cols()))
	case wire.TurnFailed:
		fmt.Fprintf(ch.e.stderr, "turn failed: %s\n", wire.Printable(ev.Message))
	}
	return nil
}

// cutText says why the answer that follows is cut short.
func cutText(ev wire.TurnAnswerCut) string {
	why := "it reached loopd's answer limit ([model] max_answer_tokens)"
	if ev.Reason == wire.CutContextFull {
		why = "the model's context was full"
	}
	return fmt.Sprintf("the answer below was cut short after %d tokens: %s", ev.Tokens, why)
}

func outcomeText(ev wire.TurnToolOutcome) string {
	switch ev.Status {
	case wire.ToolDenied:
		if ev.Reason != nil {
			return "denied (" + ev.Reason.String() + ")"
		}
		return "denied"
	case wire.ToolFailed:
		return "failed"
	}
	s := "result, " + ev.Class.String()
	if ev.Truncated {
		s += ", truncated"
	}
	return s
}

// approval prints the same two-line block as approvals, fetched from
// brokerd, which holds the details, and, when asking, asks on stderr and
// reads one line: y approves, anything else refuses. When brokerd's block
// cannot be fetched, it does not ask (issue 12): the event is loopd's word,
// which names neither the arguments nor the grant, and loopd is the
// component a hostile model drives.
func (ch *chat) approval(ev wire.TurnApprovalPending) error {
	var found *wire.PendingApproval
	ferr := fetchApprovals(ch.admin, func(items []wire.PendingApproval) {
		for _, p := range items {
			if p.Approval == ev.Approval {
				found = &p
			}
		}
	})
	if ferr == nil && found == nil {
		ferr = &fetchError{what: "brokerd does not list it (answered, expired, or its call went away)"}
	}
	if ferr != nil {
		fmt.Fprintf(ch.e.stderr, "%s: not asking about approval %d (tool %s, expires at %s): brokerd's details of it cannot be fetched, "+
			"and loopd's word is not enough to approve on: %s\n%s\n",
			ch.cmd, ev.Approval, wire.Printable(ev.Tool), ev.Expires, ferr.what, runbook.See("approval-details-unavailable"))
		return nil
	}
	fmt.Fprint(ch.e.stdout, rows(approvalBlock(*found, ch.e.now()), ch.cols()))
	if !ch.ask {
		return nil
	}
	if sum := longArguments(*found); sum != "" {
		fmt.Fprint(ch.e.stderr, sum)
	}
	fmt.Fprintf(ch.e.stderr, "approve %d? [y/N] ", ev.Approval)
	answer, _ := ch.in.ReadString('\n')
	ch.echo(strings.TrimRight(answer, "\r\n"))
	if strings.TrimSpace(answer) == "y" {
		return (&approveCmd{ID: ev.Approval, AdminSocket: ch.admin}).Run(ch.e)
	}
	return (&refuseCmd{ID: ev.Approval, AdminSocket: ch.admin}).Run(ch.e)
}

// echo shows what was read from stdin when stdin is not a terminal (a
// script, the demo), so the transcript reads as a person's session would.
func (ch *chat) echo(line string) {
	if ch.ask && !isTerminal(ch.e.stdin) {
		fmt.Fprintln(ch.e.stderr, wire.Printable(line))
	}
}

// cols is stdout's terminal's columns now, read at every event: a window
// made narrower since the last one must not wrap model text to a row
// without its gutter. 0 when stdout is not a terminal.
func (ch *chat) cols() int { return termWidth(ch.e.stdout) }

// termWidth is the columns of w's terminal, or 0 when w is not one (a
// variable, for tests).
var termWidth = func(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// gutter starts every line of text the model wrote (issue 12). None of
// the client's own lines starts with it (tool call lines, approval blocks,
// answers), and the model cannot end a line early: each of its lines is
// shown through wire.Printable, which escapes CR, escape sequences and the
// Unicode separators. So a model line can look like the client's only after
// the gutter, where the owner sees whose it is.
const gutter = "│ "

// modelText is the model's text, line by line, each line behind the gutter
// and shown as data (wire.Printable): a newline stays a line break, every
// other control character is shown escaped.
func modelText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = gutter + wire.Printable(l)
	}
	return strings.Join(lines, "\n")
}
