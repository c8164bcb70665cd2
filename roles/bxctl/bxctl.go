// Package bxctl is the owner's command line: pending approvals, approving
// and refusing them through brokerd's admin socket, checking grant files
// offline, verifying the audit log offline, and chatting with loopd. Invoked
// as "boxmaker", the binary offers these same commands.
//
// Each command lives in its own file with its flags and its Run method.
package bxctl

import (
	"io"
	"time"
)

type cli struct {
	Approvals approvalsCmd `cmd:"" help:"List the tool calls waiting for your approval."`
	Approve   approveCmd   `cmd:"" help:"Approve a pending tool call."`
	Refuse    refuseCmd    `cmd:"" help:"Refuse a pending tool call."`
	Grants    grantsCmd    `cmd:"" help:"Work with grant files."`
	Audit     auditCmd     `cmd:"" help:"Work with the audit log."`
	Chat      chatCmd      `cmd:"" help:"Talk to the agent through loopd."`
	Notes     notesCmd     `cmd:"" help:"List, show, promote or delete the model's notes."`
	Jobs      jobsCmd      `cmd:"" help:"List the scheduled jobs, or start one now."`
	Doctor    doctorCmd    `cmd:"" help:"Check the running deployment: units, sockets, brokerd's and loopd's own checks, the audit chain; exit 1 if any fails."`
}

// Main runs bxctl with args (without the program name). name is what the
// user typed to reach it ("bxctl", "boxmaker" or "boxmaker bxctl"), used in
// messages and help only: argv[0] chooses behaviour, never privilege.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(&cli{}, args, &env{name: name, stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now})
}
