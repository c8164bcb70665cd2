package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The secrets directory (issue 15): one file per secret, named after it,
// read by brokerd alone. The rules for the directory and its files live
// here, beside the grant loader, so that brokerd's store and the offline
// `bxctl grants check --secrets DIR` apply the very same ones; only brokerd
// hands a value to a tool.

// MaxSecretBytes bounds one secret file: a key or a token, not a document.
const MaxSecretBytes = 64 << 10

// The runbook entries a secret problem points to. policy cannot import the
// runbook package; the gate finds these literals like any other.
const (
	RunbookSecretsDirUnsafe  = "see docs/runbook.md#secrets-dir-unsafe"
	RunbookSecretFileUnsafe  = "see docs/runbook.md#secret-file-unsafe"
	RunbookSecretUnavailable = "see docs/runbook.md#secret-unavailable"
)

// ValidSecretName reports whether name is a secret's name: 1 to 64 bytes
// of [a-z0-9_-]. Such a name is a plain file name: no '/', no "." or "..".
func ValidSecretName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SecretError says why a secret, or the secrets directory, cannot be used.
// It names the secret and the file, never what the file holds.
type SecretError struct {
	Name    string // the secret's name; "" when only the directory was checked
	Problem string // one line
	See     string // one of the Runbook* lines
	Err     error  // the system call's error, if one is behind it
}

// Error is `secret "<name>": <problem>` and, on the next line, the runbook
// pointer.
func (e *SecretError) Error() string {
	if e.Name == "" {
		return e.Problem + "\n" + e.See
	}
	return fmt.Sprintf("secret %q: %s\n%s", e.Name, e.Problem, e.See)
}

func (e *SecretError) Unwrap() error { return e.Err }

// CheckSecretsDir checks the secrets directory as brokerd does at start:
// it must be a directory (not a symbolic link to one) owned by the
// effective user, with no access for group or others. A directory that
// does not exist is not an error (missing is true): every secret is then
// unavailable, and a grant naming one is denied.
func CheckSecretsDir(dir string) (missing bool, err error) {
	fd, missing, err := openSecretsDir(dir, "")
	if err != nil || missing {
		return missing, err
	}
	closeFD(fd)
	return false, nil
}

// CheckSecretUse reads the secret use names as ReadSecret does and forgets
// it: nil when a call needing it could run now. A value
// that goes in a header must also be one a header can carry, so that a
// call the run would refuse is denied at decision time, before the owner
// is asked to approve it.
func CheckSecretUse(dir string, use SecretUse) error {
	v, err := ReadSecret(dir, use.Name)
	defer clear(v)
	if err != nil || use.File {
		return err
	}
	if i := BadHeaderByte(v); i >= 0 {
		return &SecretError{Name: use.Name, See: RunbookSecretFileUnsafe,
			Problem: fmt.Sprintf("goes in the header %s, but byte %d of its value is a control character, which a header cannot carry", use.Header, i)}
	}
	return nil
}

// BadHeaderByte is the position of the first byte of v that an HTTP field
// value cannot hold (a control character other than tab, or DEL: one could
// end the header line and start another), or -1.
func BadHeaderByte(v []byte) int {
	for i, c := range v {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return i
		}
	}
	return -1
}

// ReadSecret returns the value of the secret name in dir. The directory is
// checked as CheckSecretsDir does, every time. The file is opened relative
// to it without following a symbolic link, and must be a regular file
// owned by the effective user, with no access for group or others, of at
// most MaxSecretBytes. One trailing newline is dropped, because
// `echo value > file` is how a secret is usually written; whatever is left
// must not be empty. Every error is a *SecretError.
func ReadSecret(dir, name string) ([]byte, error) {
	if !ValidSecretName(name) {
		return nil, &SecretError{Name: name, Problem: "is not a valid secret name (1 to 64 characters of [a-z0-9_-])", See: RunbookSecretUnavailable}
	}
	dfd, missing, err := openSecretsDir(dir, name)
	if err != nil {
		return nil, err
	}
	if missing {
		return nil, &SecretError{Name: name, Problem: fmt.Sprintf("the secrets directory %s does not exist", dir), See: RunbookSecretUnavailable}
	}
	defer closeFD(dfd)
	path := filepath.Join(dir, name)
	unsafe := func(err error, format string, args ...any) error {
		return &SecretError{Name: name, Problem: path + " " + fmt.Sprintf(format, args...), See: RunbookSecretFileUnsafe, Err: err}
	}
	fd, err := retry(func() (int, error) {
		return syscall.Openat(dfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NOCTTY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	})
	switch {
	case errors.Is(err, syscall.ENOENT):
		return nil, &SecretError{Name: name, Problem: "there is no file " + path, See: RunbookSecretUnavailable, Err: err}
	case errors.Is(err, syscall.ELOOP):
		return nil, unsafe(err, "is a symbolic link; brokerd reads only a file itself")
	case err != nil:
		return nil, unsafe(err, "cannot be opened: %v", err)
	}
	defer closeFD(fd)
	var st syscall.Stat_t
	if _, err := retry(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		return nil, unsafe(err, "cannot be examined: %v", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, unsafe(nil, "is not a regular file")
	}
	if p := ownedAlone(fd, st, 0o600); p != "" {
		return nil, unsafe(nil, "%s", p)
	}
	if st.Size > MaxSecretBytes {
		return nil, unsafe(nil, "is larger than %d bytes", MaxSecretBytes)
	}
	v, err := readSecretFD(fd, st.Size)
	if err != nil {
		return nil, unsafe(nil, "%v", err)
	}
	if n := len(v); n > 0 && v[n-1] == '\n' {
		v[n-1] = 0
		v = v[:n-1]
	}
	if len(v) == 0 {
		return nil, &SecretError{Name: name, Problem: path + " is empty", See: RunbookSecretUnavailable}
	}
	return v, nil
}

// readSecretFD reads at most MaxSecretBytes from fd; a file that grew past
// that since fstat is refused, and what was read is wiped.
func readSecretFD(fd int, size int64) ([]byte, error) {
	buf := make([]byte, min(max(size, 0), MaxSecretBytes)+1)
	n := 0
	for {
		k, err := retry(func() (int, error) { return syscall.Read(fd, buf[n:]) })
		if err != nil {
			clear(buf)
			return nil, fmt.Errorf("cannot be read: %v", err)
		}
		if k == 0 {
			return buf[:n:n], nil
		}
		n += k
		if n > MaxSecretBytes {
			clear(buf)
			return nil, fmt.Errorf("is larger than %d bytes", MaxSecretBytes)
		}
		if n == len(buf) {
			grown := make([]byte, min(2*len(buf), MaxSecretBytes+1))
			copy(grown, buf)
			clear(buf)
			buf = grown
		}
	}
}

// openSecretsDir opens dir for openat; missing is true, with no error, when
// it does not exist. name is the secret asked for, for the error ("" at
// start).
func openSecretsDir(dir, name string) (fd int, missing bool, err error) {
	unsafe := func(err error, format string, args ...any) *SecretError {
		return &SecretError{Name: name, Problem: "the secrets directory " + dir + " " + fmt.Sprintf(format, args...), See: RunbookSecretsDirUnsafe, Err: err}
	}
	fd, err = retry(func() (int, error) {
		return syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return -1, true, nil
		}
		// O_NOFOLLOW with O_DIRECTORY may say ELOOP or ENOTDIR for a
		// link; lstat tells which it is.
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return -1, false, unsafe(err, "is a symbolic link; give brokerd the directory itself")
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return -1, false, unsafe(err, "is not a directory")
		}
		return -1, false, unsafe(err, "cannot be opened: %v", err)
	}
	var st syscall.Stat_t
	if _, err := retry(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		closeFD(fd)
		return -1, false, unsafe(err, "cannot be examined: %v", err)
	}
	if p := ownedAlone(fd, st, 0o700); p != "" {
		closeFD(fd)
		return -1, false, unsafe(nil, "%s", p)
	}
	return fd, false, nil
}

// geteuid is os.Geteuid; a test that cannot chown pretends to be another
// user instead.
var geteuid = os.Geteuid

// ownedAlone says why the open fd, whose status is st, is not the
// effective user's alone, or returns "": it must belong to the effective
// user and give group and others no access at all, or (systemd's
// credentials, secretacl.go) belong to root, give others nothing, and
// share it with no user but the effective one by its ACL. fix is the mode
// to suggest.
func ownedAlone(fd int, st syscall.Stat_t, fix os.FileMode) string {
	euid := uint32(geteuid())
	perm := st.Mode & 0o777
	if st.Uid == euid && perm&0o077 == 0 {
		return ""
	}
	if st.Uid == 0 && euid != 0 && perm&0o007 == 0 && onlyUserACL(fd, euid) {
		return ""
	}
	if st.Uid == 0 && euid != 0 {
		return fmt.Sprintf("is owned by uid 0, not by uid %d, the user reading it, and no ACL shares it with that user alone", euid)
	}
	if st.Uid != euid {
		return fmt.Sprintf("is owned by uid %d, not by uid %d, the user reading it", st.Uid, euid)
	}
	return fmt.Sprintf("has mode %04o: group and others must have no access (chmod %o)", perm, fix)
}
