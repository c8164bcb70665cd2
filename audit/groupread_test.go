package audit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Deployed, audit/ is the owner group's to read (mode 2750) and its log
// files must be too, whatever the writer's umask; in a private directory
// they stay 0600.
func TestLogFilesShareTheDirectorysGroupRead(t *testing.T) {
	old := syscall.Umask(0o077) // the unit's UMask=
	defer syscall.Umask(old)
	for _, tc := range []struct {
		dirMode os.FileMode
		want    os.FileMode
	}{
		{0o700, 0o600},
		{0o750 | os.ModeSetgid, 0o640},
		{0o710, 0o600}, // search alone is not read
	} {
		dir := logDir(t)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tc.dirMode); err != nil {
			t.Fatal(err)
		}
		writeLog(t, dir, newClock(day0), 2)
		fi, err := os.Stat(filepath.Join(dir, f1))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.want {
			t.Errorf("in a %v directory the log file is %v, want %v", tc.dirMode, fi.Mode().Perm(), tc.want)
		}
	}
}
