package config

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"boxmaker/runbook"
)

// Token is the bot's access token. It prints as its length only, so that
// no log line, error or %v of a struct that holds it can show it.
type Token struct{ value string }

// Value is the token itself, for the Authorization header and nothing else.
func (t Token) Value() string { return t.value }

func (t Token) String() string   { return fmt.Sprintf("Token(%d bytes)", len(t.value)) }
func (t Token) GoString() string { return t.String() }

// Format keeps every verb (%s, %v, %+v, %q, %x) to String.
func (t Token) Format(f fmt.State, _ rune) { io.WriteString(f, t.String()) }

// maxTokenBytes bounds the file read: Mattermost's tokens are 26 characters.
const maxTokenBytes = 256

// ReadToken reads the token file at path. It must be a regular file (not a
// symlink) that neither group nor others may read; it holds the token and
// at most one trailing newline; the token is printable ASCII without
// spaces. Errors name the file and the problem, never the content.
func ReadToken(path string) (Token, error) {
	fail := func(problem string) (Token, error) {
		return Token{}, fmt.Errorf("the token file %s %s; %s", path, problem, runbook.See("gatewayd-token-unsafe"))
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return fail("is a symbolic link")
		}
		return fail(fmt.Sprintf("cannot be opened: %v", err))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(fmt.Sprintf("cannot be read: %v", err))
	}
	switch {
	case !fi.Mode().IsRegular():
		return fail("is not a regular file")
	case fi.Mode().Perm()&0o077 != 0:
		return fail(fmt.Sprintf("has mode %04o: group and others must have no access (chmod 600)", fi.Mode().Perm()))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return fail(fmt.Sprintf("cannot be read: %v", err))
	}
	if len(b) > maxTokenBytes {
		return fail(fmt.Sprintf("is larger than %d bytes", maxTokenBytes))
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if len(b) == 0 {
		return fail("is empty")
	}
	for _, c := range b {
		if c <= ' ' || c > '~' {
			return fail("holds something other than one token (printable characters without spaces, and one newline at the end)")
		}
	}
	return Token{string(b)}, nil
}
