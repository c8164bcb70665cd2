package jobs

import (
	"errors"

	"boxmaker/roles/brokerd/internal/ownfile"
)

// maxStateBytes bounds what is read of jobs.json: a record is under 300
// bytes, so this is tens of thousands of jobs; a larger file is damaged.
const maxStateBytes = 16 << 20

// readStateFile reads the state file as every brokerd state file is read
// (ownfile; issue 29, class 1). A link, directory, FIFO or oversized file
// at the name is damage; any other error is not. readStateBytes is replaced
// in tests to play a read error no real file gives a root test (EIO,
// EACCES, EMFILE).
func readStateFile(path string) ([]byte, error) {
	data, err := readStateBytes(path)
	if errors.Is(err, ownfile.ErrNotOwn) {
		return nil, damage{err}
	}
	return data, err
}

var readStateBytes = func(path string) ([]byte, error) { return ownfile.Read(path, maxStateBytes) }
