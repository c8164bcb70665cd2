package sessionlog

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"boxmaker/wire"
)

// Sent describes one request loopd sent and what the server said of it. The
// session log cannot hold this (LogRecord has no place for it), yet a
// restarted loopd needs it twice: to check that the request it rebuilds from
// the log is byte for byte the one it sent (an edited record shows up here),
// and to know how many tokens the server's slot should still hold.
type Sent struct {
	// Records is how many of the epoch's records the request was built from.
	Records int
	// Bytes and Hash are the request body's length and SHA-256.
	Bytes int
	Hash  wire.Hash32
	// Prompt is the request's prompt in tokens (cache_n + prompt_n).
	Prompt uint64
	// Context is the slot's tokens after the answer (Prompt + predicted_n).
	Context uint64
}

func (s Sent) String() string {
	return fmt.Sprintf("records %d bytes %d sha256 %s prompt %d context %d", s.Records, s.Bytes, s.Hash, s.Prompt, s.Context)
}

// SentPath is the side file of path's sent requests.
func SentPath(path string) string { return strings.TrimSuffix(path, ".jsonl") + ".sent" }

// AppendSent records s after the log at path.
func AppendSent(path string, s Sent) error {
	return appendSynced(SentPath(path), []byte(s.String()+"\n"))
}

// LastSent is the last complete entry of path's .sent file, or nil when
// there is none. A torn final entry is ignored: it describes a request the
// log may not have finished, and the one before it is still true.
func LastSent(path string) (*Sent, error) {
	data, err := os.ReadFile(SentPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessionlog: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	lines = lines[:len(lines)-1] // the part after the last newline is torn or empty
	if len(lines) == 0 {
		return nil, nil
	}
	l := lines[len(lines)-1]
	var s Sent
	var hash string
	_, err = fmt.Sscanf(l, "records %d bytes %d sha256 %s prompt %d context %d", &s.Records, &s.Bytes, &hash, &s.Prompt, &s.Context)
	if err == nil {
		s.Hash, err = wire.ParseHash32(hash)
	}
	if err != nil || s.String() != l {
		return nil, &DamagedError{SentPath(path), len(lines), "not a sent-request entry"}
	}
	return &s, nil
}
