// Package inferproxy forwards loopd's HTTP requests on infer.sock, byte for
// byte, to the model server. It is the only role that opens a TCP connection
// to the model server. Only the requests loopd needs pass (GET /health,
// GET /props, GET /v1/models, POST /tokenize, POST /v1/chat/completions);
// replies stream through as they arrive.
package inferproxy

import "io"

type cli struct {
	Serve serveCmd `cmd:"" help:"Forward loopd's requests on infer.sock to the model server."`
}

// Main runs inferproxy with args (without the program name). name is what
// the user typed to reach it ("inferproxy" or "boxmaker inferproxy"), used in
// messages and help only: argv[0] chooses behaviour, never privilege.
func Main(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCLI(&cli{}, args, &env{name: name, stdin: stdin, stdout: stdout, stderr: stderr})
}
