// Package secrets is brokerd's secrets directory (issue 15): one file per
// secret, named after it, read by brokerd alone, at decision time to see
// that a call can run (Check) and at run time for the value (Read).
//
// The rules for the directory and its files are policy's
// (policy.ReadSecret), so that the offline `bxctl grants check --secrets`
// applies the very same ones; this package is where brokerd holds the
// directory. Only brokerd imports it. Nothing here keeps a value: each Read
// opens the file again, and the caller owns (and should clear) what it
// returns.
package secrets

import (
	"boxmaker/policy"
)

// Store is a secrets directory, e.g. brokerd.toml's [paths] secrets, or
// systemd's $CREDENTIALS_DIRECTORY. It holds only the directory's path.
type Store struct {
	dir     string
	missing bool
}

// Open checks dir as brokerd does at start and returns the store. It refuses
// a directory that is a symbolic link, is not owned by the effective user,
// or gives group or others any access; the error (a *policy.SecretError)
// names the problem and ends with "see docs/runbook.md#secrets-dir-unsafe".
// A directory that does not exist is accepted: every secret is then
// unavailable (Check says so) until it does, and Missing reports it.
func Open(dir string) (*Store, error) {
	missing, err := policy.CheckSecretsDir(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, missing: missing}, nil
}

// Dir is the directory's path.
func (s *Store) Dir() string { return s.dir }

// Missing reports whether the directory did not exist when Open checked it.
func (s *Store) Missing() bool { return s.missing }

// Check is nil when the secret name can be read now, or says why not: the
// directory or the file is missing, empty or unsafe. It reads the file the
// way Read does and forgets the value, so that a call is never decided on
// a file Read would refuse. It is what brokerd gives
// policy.GrantsDir.SetSecretCheck. Errors name the secret and the problem,
// never the content, and end with the runbook pointer
// (secret-unavailable, secret-file-unsafe or secrets-dir-unsafe).
func (s *Store) Check(name string) error { return policy.CheckSecret(s.dir, name) }

// Read returns the value of the secret name, read now: the file's bytes
// with one trailing newline dropped (`echo value > file` writes one). The
// directory and the file are checked as Check does, every time. The caller
// should clear the slice once the value is handed on.
func (s *Store) Read(name string) ([]byte, error) { return policy.ReadSecret(s.dir, name) }

// ValidName reports whether name is a secret's name: 1 to 64 characters
// of [a-z0-9_-].
func ValidName(name string) bool { return policy.ValidSecretName(name) }

// String names the directory, never a value (a Store holds none).
func (s *Store) String() string { return "secrets.Store(" + s.dir + ")" }
