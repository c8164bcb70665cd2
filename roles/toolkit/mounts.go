package toolkit

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// checkMounts runs before anything else the request asks: each path brokerd
// mounted must be, here, the very object brokerd opened and checked on the
// host (same device and inode), reached without a symlink. brokerd gives
// Podman the checked path, and the host resolves it again when the
// container starts; a folder swapped for a symlink in between (by another
// call's command, under a writable grant) would mount something else, and
// this is where that is caught, before any tool code could read it.
func checkMounts(ms []wire.ToolkitMount) error {
	for _, m := range ms {
		fd, err := unix.Openat2(unix.AT_FDCWD, m.Path, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return mountDiffers(m.Path, err.Error())
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return mountDiffers(m.Path, err.Error())
		}
		if st.Dev != m.Dev || st.Ino != m.Ino {
			return mountDiffers(m.Path, fmt.Sprintf("found device %d inode %d, brokerd checked device %d inode %d", st.Dev, st.Ino, m.Dev, m.Ino))
		}
	}
	return nil
}

func mountDiffers(path, why string) error {
	return errors.New("toolkit: refused to run: the mount at " + path + " is not what brokerd checked (" + why +
		"); it changed on the host while the container was made; " + runbook.See("mount-source-refused"))
}
