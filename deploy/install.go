package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"boxmaker/runbook"
)

// installSelf puts the running executable at <Bin>/boxmaker, where the
// role links and the units point, when nothing is there: so that `sudo
// bin/boxmaker deploy apply --start` from a fresh build is the whole
// install. The same bytes there already change nothing. Another build
// there is refused: replacing the binary of a running deployment is an
// upgrade, which must restart the roles in order. It returns the line to
// print ("" when nothing was done); dry only says what it would do.
func installSelf(p Plan, self string, dry bool) (string, error) {
	dst := filepath.Join(p.Bin, "boxmaker")
	src, err := filepath.EvalSymlinks(self)
	if err != nil {
		return "", fmt.Errorf("deploy apply: this executable: %w", err)
	}
	if real, err := filepath.EvalSymlinks(dst); err == nil && real == src {
		return "", nil
	}
	mine, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("deploy apply: this executable: %w", err)
	}
	there, err := os.ReadFile(dst)
	switch {
	case err == nil && bytes.Equal(there, mine):
		return "", nil
	case err == nil:
		return "", fmt.Errorf("%w: %s is another build of boxmaker than this one (%s), and nothing was changed; install this one over it by hand once the roles are stopped (`sudo systemctl stop %s*`, `sudo install -m 0755 %s %s`), or run %s deploy apply; %s",
			ErrConflict, dst, src, p.Prefix, src, dst, dst, runbook.See("deploy-conflict"))
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("deploy apply: %w", err)
	}
	line := fmt.Sprintf("install %s as %s (root's, 0755)", src, dst)
	if dry {
		return "would " + line, nil
	}
	if err := copyExecutable(src, dst); err != nil {
		return "", fmt.Errorf("deploy apply: %s: %w; %s", line, err, runbook.See("deploy-failed"))
	}
	return line, nil
}

// copyExecutable writes src to dst, 0755, by a temporary file beside dst
// renamed into place: dst is never half written.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".boxmaker.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
