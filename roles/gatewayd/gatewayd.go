// Package gatewayd is the Mattermost gateway: the owner's messages become
// channel messages on loop.sock, and approval requests from brokerd arrive on
// gateway.sock and are posted; only an allowlisted user's answer on that post
// counts, and it goes to brokerd. It is the only role that talks to
// Mattermost (issue 14).
package gatewayd

import "io"

type cli struct {
	Serve serveCmd `cmd:"" help:"Bridge the owner's Mattermost channel to loop.sock and approvals to brokerd."`
}

type serveCmd struct {
	Config string `required:"" placeholder:"PATH" help:"gatewayd's configuration file to read."`
}

// Main runs gatewayd with args (without the program name). name is what the
// user typed to reach it ("gatewayd" or "boxmaker gatewayd"), used in
// messages and help only: argv[0] chooses behaviour, never privilege.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(&cli{}, args, &env{name: name, stdin: stdin, stdout: stdout, stderr: stderr})
}
