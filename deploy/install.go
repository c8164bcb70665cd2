package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// surveyExecutable is the survey of <Bin>/boxmaker, where the role links
// and the units point. Missing, it is an action when ApplyOptions.Self
// names the running executable (so that `sudo bin/boxmaker deploy apply
// --start` from a fresh build is the whole install), a conflict otherwise.
// The same bytes there already change nothing. Another build there is a
// conflict: replacing the binary of a running deployment is an upgrade
// (deploy upgrade), which also rebuilds the tool image and restarts the
// roles.
func (a *applier) surveyExecutable(conflict func(string, ...any)) []action {
	dst := filepath.Join(a.plan.Bin, "boxmaker")
	fi, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) && a.opts.Self != "" {
		src := a.opts.Self
		return []action{{fmt.Sprintf("install %s as %s (root's, 0755)", src, dst), func() error { return copyExecutable(src, dst) }}}
	}
	if err != nil || !fi.Mode().IsRegular() {
		conflict("%s is not installed: copy the boxmaker executable there first (install -m 0755 bin/boxmaker %s)", dst, dst)
		return nil
	}
	if a.opts.Self == "" || a.opts.Self == dst {
		return nil
	}
	mine, err1 := os.ReadFile(a.opts.Self)
	there, err2 := os.ReadFile(dst)
	if err := errors.Join(err1, err2); err != nil {
		conflict("%s cannot be compared with this executable: %v", dst, err)
	} else if !bytes.Equal(mine, there) {
		conflict("%s is another build of boxmaker than this one (%s): to replace it, run `%s deploy upgrade %s`; to keep it, run %s deploy apply",
			dst, a.opts.Self, dst, a.opts.Self, dst)
	}
	return nil
}

// copyExecutable writes src to dst, root's and 0755, replacing it whole
// (replaceWith): dst is never half written.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return replaceWith(dst, in, func(f *os.File) error { return f.Chmod(0o755) })
}

// replaceWith writes what r holds to path by a temporary file beside it:
// given its owner and mode by own while open, synced, then renamed over
// path. A failure leaves path as it was and no temporary file.
func replaceWith(path string, r io.Reader, own func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	_, err = io.Copy(tmp, r)
	if err == nil {
		err = own(tmp)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
