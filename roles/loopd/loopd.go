// Package loopd is the agent loop: it holds sessions, talks to the model
// through inferproxy, offers the model its fixed tools and sends every other
// tool call to brokerd. It serves the channel protocol on loop.sock for
// bxctl chat and gatewayd. Its insides are under internal/: config,
// sessionlog, prompt, neutral, llama, tools, session, channel and server.
package loopd

import "io"

type cli struct {
	Serve serveCmd `cmd:"" help:"Run the agent loop and serve the channel protocol on loop.sock."`
}

type serveCmd struct {
	Config string `required:"" placeholder:"PATH" help:"loopd's configuration file to read."`
}

// Main runs loopd with args (without the program name). name is what the
// user typed to reach it ("loopd" or "boxmaker loopd"), used in messages and
// help only: argv[0] chooses behaviour, never privilege.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(&cli{}, args, &env{name: name, stdin: stdin, stdout: stdout, stderr: stderr})
}
