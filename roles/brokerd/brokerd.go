// Package brokerd is the tool broker: it decides every tool call against the
// owner's grants, records the decision in the audit log before anything runs,
// holds approvals, and (from M3b) runs tools in containers. It is the only
// role that talks to Podman. Its insides are under internal/: config,
// state, approvals, broker, admin and serve.
package brokerd

import "io"

type cli struct {
	Serve serveCmd `cmd:"" help:"Decide, record and answer tool calls on broker.sock; take approvals on admin.sock."`
	Image imageCmd `cmd:"" help:"Build the tool image (see image build --help)."`
}

// Main runs brokerd with args (without the program name). name is what the
// user typed to reach it ("brokerd" or "boxmaker brokerd"), used in messages
// and help only: argv[0] chooses behaviour, never privilege.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(&cli{}, args, &env{name: name, stdin: stdin, stdout: stdout, stderr: stderr})
}
