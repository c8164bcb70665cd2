package bxctl

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// The owner's commands that need the running brokerd reach it over
// admin.sock, one request per connection (M3a §6).

// Timeouts: to connect, and for the answer. approve and refuse are answered
// once the call has recorded its Approval record, which may wait for another
// call of the same session to finish; two minutes is ample.
const (
	dialTimeout   = 5 * time.Second
	answerTimeout = 2 * time.Minute
)

// defaultHome is BOXMAKER_HOME, else /var/lib/boxmaker.
func defaultHome() string {
	if h := os.Getenv("BOXMAKER_HOME"); h != "" {
		return h
	}
	return "/var/lib/boxmaker"
}

// adminSocket is the --admin-socket flag, or its default under BOXMAKER_HOME.
func adminSocket(flag string) string {
	if flag != "" {
		return flag
	}
	return filepath.Join(defaultHome(), "run", "owner-broker", "admin.sock")
}

// ask sends msg to brokerd at path and returns the answer. What it cannot do
// is printed for the owner, with the runbook line, and returned as exit
// status 1. cmd names the command in messages ("bxctl approve").
func ask(e *env, cmd, path string, msg wire.Message) (wire.Message, error) {
	conn, err := net.DialTimeout("unix", path, dialTimeout)
	if err != nil {
		return nil, unreachable(e, cmd, path, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(answerTimeout))
	if err := wire.WriteEnvelope(conn, wire.Request(1, msg)); err != nil {
		return nil, unreachable(e, cmd, path, err)
	}
	env, err := wire.ReadEnvelope(conn)
	if err != nil {
		return nil, unreachable(e, cmd, path, fmt.Errorf("no answer: %w", err))
	}
	if !env.Final || env.ID != 1 {
		fmt.Fprintf(e.stderr, "%s: brokerd answered out of turn (frame %d, final %v)\n", cmd, env.ID, env.Final)
		return nil, exitCode(1)
	}
	// The "no such" answers are the command's to explain; any other error
	// is reported here.
	if we, ok := env.Msg.(wire.WireError); ok && we.Code != wire.NoSuchApproval && we.Code != wire.NoSuchNote &&
		we.Code != wire.NoSuchJob && we.Code != wire.JobRunning {
		fmt.Fprintf(e.stderr, "%s: brokerd refused the request: %s: %s\n", cmd, we.Code, wire.Printable(we.Detail))
		return nil, exitCode(1)
	}
	return env.Msg, nil
}

func unreachable(e *env, cmd, path string, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		err = fmt.Errorf("timed out: %w", err)
	}
	fmt.Fprintf(e.stderr, "%s: cannot reach brokerd at %s: %s\n%s\n", cmd, wire.Printable(path), wire.Printable(err.Error()), runbook.See("admin-unavailable"))
	return exitCode(1)
}

// unexpected reports an answer of the wrong kind.
func unexpected(e *env, cmd string, msg wire.Message) error {
	fmt.Fprintf(e.stderr, "%s: brokerd answered with %s\n", cmd, msg.Kind())
	return exitCode(1)
}
