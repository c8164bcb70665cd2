package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive flock on dir/.lock. flock belongs to the open
// file, not the process, so a second Writer in the same process is refused
// too. The kernel drops the lock when the process dies, however it dies.
func lockDir(dir string) (*os.File, error) {
	// O_NOFOLLOW: a link planted at the name would make or lock its target.
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close() // nothing was written through it
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errAlreadyRunning
		}
		return nil, fmt.Errorf("audit: locking %s: %w", f.Name(), err)
	}
	return f, nil
}

// unlock releases the lock by closing its file.
func unlock(f *os.File) error {
	return f.Close()
}
