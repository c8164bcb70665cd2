package bxctl

// chat speaks the channel protocol on loop.sock, the same one gatewayd
// speaks (M2).

type chatCmd struct {
	Say  string `placeholder:"TEXT" help:"Send one message, print the answer and exit."`
	JSON bool   `name:"json" help:"Print the turn's events as JSON lines."`
}

func (c *chatCmd) Run(e *env) error {
	return notYet(e, "chat", "the loopd issue")
}
