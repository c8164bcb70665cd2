package sessionlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// Log is one epoch's log as read: its records in order, and what reading
// found about its shape.
type Log struct {
	Records []wire.LogRecord
	// Lines holds the 1-based line of each record.
	Lines []int
	// Torn is the final line if it has no newline: a write cut short by a
	// crash. Its bytes are not a record. Recover closes it.
	Torn *Torn
	// Recovered lists lines skipped because the .torn file lists them.
	Recovered []int
	// Size is the length of the file in bytes.
	Size int64
}

// Torn describes a torn line: where it is and exactly what it holds.
type Torn struct {
	Line  int
	Bytes int
	Hash  wire.Hash32
}

func (t Torn) String() string {
	return fmt.Sprintf("line %d bytes %d sha256 %s", t.Line, t.Bytes, t.Hash)
}

// DamagedError says a log cannot be trusted to rebuild its session: a line
// in the middle does not parse, or the records are not in a possible order.
// The session is refused; nothing is rewritten.
type DamagedError struct {
	Path string
	Line int
	What string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("session log damaged: %s:%d: %s; %s", e.Path, e.Line, e.What, runbook.See("session-log-damaged"))
}

// ErrNotFound is returned by Read for a log that does not exist.
var ErrNotFound = errors.New("sessionlog: no such log")

// TornPath is the side file listing path's recovered torn lines.
func TornPath(path string) string { return strings.TrimSuffix(path, ".jsonl") + ".torn" }

// Read reads the log at path. Every complete line must be a canonical
// LogRecord, except lines the .torn file lists with their exact length and
// hash. A final line without a newline is returned as Torn, not as damage.
func Read(path string) (*Log, error) {
	data, err := readOwn(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sessionlog: %w", err)
	}
	listed, err := readTorn(TornPath(path))
	if err != nil {
		return nil, err
	}
	log := &Log{Size: int64(len(data))}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			log.Torn = &Torn{Line: n, Bytes: len(data), Hash: wire.Sha256(data)}
			break
		}
		line := data[:i]
		data = data[i+1:]
		if t, ok := listed[n]; ok {
			if t.Bytes != len(line) || t.Hash != wire.Sha256(line) {
				return nil, &DamagedError{path, n, "the line listed as a recovered torn line has changed"}
			}
			log.Recovered = append(log.Recovered, n)
			continue
		}
		var rec wire.LogRecord
		if err := wire.Unmarshal(line, &rec); err != nil {
			return nil, &DamagedError{path, n, err.Error()}
		}
		log.Records = append(log.Records, rec)
		log.Lines = append(log.Lines, n)
	}
	return log, nil
}

// Recover closes a torn final line the way the audit log does: the bytes
// stay, the .torn file records exactly what they were, and a newline ends
// the line so the log continues after it. Call it once per torn line Read
// reports; after a crash in the middle the line reads as torn again, and
// Recover finishes without listing it twice.
func Recover(path string, t Torn) error {
	listed, err := readTorn(TornPath(path))
	if err != nil {
		return err
	}
	if _, ok := listed[t.Line]; !ok {
		if err := appendSynced(TornPath(path), []byte(t.String()+"\n")); err != nil {
			return err
		}
	}
	return appendSynced(path, []byte("\n"))
}

// readTorn reads the .torn file; a missing file lists nothing. Its own torn
// final line (a crash while recording) is ignored: the log's line is then
// still torn, and Recover records it again.
func readTorn(path string) (map[int]Torn, error) {
	data, err := readOwn(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessionlog: %w", err)
	}
	out := map[int]Torn{}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines[:len(lines)-1] {
		var t Torn
		var hash string
		if _, err := fmt.Sscanf(l, "line %d bytes %d sha256 %s", &t.Line, &t.Bytes, &hash); err != nil {
			return nil, &DamagedError{path, i + 1, "not a torn-line entry"}
		}
		h, err := wire.ParseHash32(hash)
		t.Hash = h
		if err != nil || t.String() != l {
			return nil, &DamagedError{path, i + 1, "not a torn-line entry"}
		}
		out[t.Line] = t
	}
	return out, nil
}
