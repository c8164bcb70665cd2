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
	// Slot is the server slot (id_slot) the request was sent to. Entries
	// written before loopd spread sessions over the server's slots have
	// none: Slot is then -1, and the request went to the slot its epoch's
	// SessionStart names.
	Slot int
}

func (s Sent) String() string {
	line := fmt.Sprintf("records %d bytes %d sha256 %s prompt %d context %d", s.Records, s.Bytes, s.Hash, s.Prompt, s.Context)
	if s.Slot >= 0 {
		line += fmt.Sprintf(" slot %d", s.Slot)
	}
	return line
}

// SentPath is the side file of path's sent requests.
func SentPath(path string) string { return strings.TrimSuffix(path, ".jsonl") + ".sent" }

// SentWriter appends to the .sent file of one epoch's log. It does not
// sync: the file is advice, not the record. Losing its last entries in a
// crash costs only the check of those requests; the entry before them is
// still true, because every request extends the one before.
type SentWriter struct {
	f *os.File
}

// OpenSent opens the .sent file of the log at path for appending (0600).
func OpenSent(path string) (*SentWriter, error) {
	f, err := openOwn(SentPath(path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sessionlog: %w", err)
	}
	return &SentWriter{f: f}, nil
}

// Append records s in one write.
func (w *SentWriter) Append(s Sent) error {
	if _, err := w.f.WriteString(s.String() + "\n"); err != nil {
		return fmt.Errorf("sessionlog: %w", err)
	}
	return nil
}

// Close closes the file.
func (w *SentWriter) Close() error { return w.f.Close() }

// LastSent is the last complete entry of path's .sent file, or nil when
// there is none. A torn final entry is ignored: it describes a request the
// log may not have finished, and the one before it is still true.
func LastSent(path string) (*Sent, error) {
	data, err := readOwn(SentPath(path))
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
	s := Sent{Slot: -1}
	var hash string
	format := "records %d bytes %d sha256 %s prompt %d context %d"
	args := []any{&s.Records, &s.Bytes, &hash, &s.Prompt, &s.Context}
	if strings.Contains(l, " slot ") {
		format, args = format+" slot %d", append(args, &s.Slot)
	}
	_, err = fmt.Sscanf(l, format, args...)
	if err == nil {
		s.Hash, err = wire.ParseHash32(hash)
	}
	if err != nil || s.String() != l {
		return nil, &DamagedError{SentPath(path), len(lines), "not a sent-request entry"}
	}
	return &s, nil
}
