package toolkit

import (
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"boxmaker/wire"
)

// secretDir is wire.ToolkitSecretDir; this package's tests point it at a
// folder of their own.
var secretDir = wire.ToolkitSecretDir

// writeSecret puts a secret delivered as a file (a shell grant's
// secret_deliver = "file") where brokerd said: a new file directly in
// wire.ToolkitSecretDir, the tmpfs brokerd mounted for this call alone,
// readable by the tool's user only. The tmpfs goes with the container, so
// nothing of the value outlives the call. The value is cleared from the
// request once written.
func writeSecret(s wire.ToolkitSecret) error {
	dir, name := path.Split(s.Path)
	if path.Clean(dir) != secretDir || name == "" || name == "." || name == ".." || strings.ContainsRune(name, 0) {
		return fmt.Errorf("the secret's file %q is not directly in %s", s.Path, secretDir)
	}
	defer clear(s.Value)
	// O_EXCL and O_NOFOLLOW: a new file, not whatever might be there.
	fd, err := unix.Open(s.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o400)
	if err != nil {
		return fmt.Errorf("cannot create the secret's file %s: %v", s.Path, err)
	}
	defer unix.Close(fd)
	for b := s.Value; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			return fmt.Errorf("cannot write the secret's file %s: %v", s.Path, err)
		}
		b = b[n:]
	}
	return nil
}
