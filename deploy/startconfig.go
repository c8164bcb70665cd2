package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"github.com/pelletier/go-toml/v2"
)

func (p Plan) unitName(role string) string { return p.Prefix + role + ".service" }
func (p Plan) etc(s ...string) string      { return filepath.Join(append([]string{p.Etc}, s...)...) }

// seedImageLine is the image line of the seed brokerd.toml (configs.go),
// and autoImageLine what --start makes of it (a comment after the value is
// kept).
const (
	seedImageLine = `image = ""`
	autoImageLine = `image = "auto"`
)

var imageLine = regexp.MustCompile(`(?m)^image = ("[^"]*")[ \t]*(#.*)?$`)

// setAutoImage makes the seed's `image = ""` in brokerd.toml `image =
// "auto"`, in place (same owner, group and mode; written beside it and
// renamed). A file that already says "auto" is left; one that names an id
// or anything else is the owner's choice, kept and reported.
func setAutoImage(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := imageLine.FindAllSubmatchIndex(data, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("%s has %d lines `image = \"...\"` (in [podman]), not one; set image = \"auto\" there by hand", path, len(m))
	}
	value := string(data[m[0][2]:m[0][3]])
	switch value {
	case `"auto"`:
		return ": it says so already", nil
	case `""`:
	default:
		return fmt.Sprintf(": left as the owner set it (image = %s)", value), nil
	}
	out := append(append(bytes.Clone(data[:m[0][2]]), `"auto"`...), data[m[0][3]:]...)
	return "", replaceFile(path, out)
}

// replaceFile writes data over path atomically, keeping its owner, group
// and mode.
func replaceFile(path string, data []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if err := chownLike(tmp, fi); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
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
	return os.Rename(tmp.Name(), path)
}

// chownLike gives f the owner and group of fi.
func chownLike(f *os.File, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner to keep", fi.Name())
	}
	return f.Chown(int(st.Uid), int(st.Gid))
}

// firstCoreMemory writes an empty core memory with the plan's owner, group
// and mode when there is none; one that exists is the owner's and is left.
func firstCoreMemory(p Plan) (string, error) {
	path := filepath.Join(p.Home, "memory", "core.md")
	var want Path
	for _, q := range p.Paths {
		if q.Path == path {
			want = q
		}
	}
	if want.Path == "" {
		return "", fmt.Errorf("the plan has no %s", path)
	}
	if _, err := os.Lstat(path); err == nil {
		return ": " + path + " is there, the owner's", nil
	}
	u, err := user.Lookup(want.Owner)
	if err != nil {
		return "", err
	}
	g, err := user.LookupGroup(want.Group)
	if err != nil {
		return "", err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(g.Gid)
	mode, err := strconv.ParseUint(want.Mode, 8, 32)
	if err != nil {
		return "", fmt.Errorf("the plan's mode %q for %s: %w", want.Mode, path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	err = errors.Join(f.Chown(uid, gid), f.Chmod(os.FileMode(mode)), f.Sync(), f.Close())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(": wrote an empty %s (%s:%s %s); write in it, as root, what every prompt should hold", path, want.Owner, want.Group, want.Mode), nil
}

// gatewayPlaceholder is the seed gatewayd.toml's URL (configs.go).
const gatewayPlaceholder = "https://mattermost.invalid"

// gatewaydUnset says why gatewayd is not to be started ("" when it may be):
// its configuration still has the seed's placeholder URL or no owners, or
// the bot's token file is missing or empty. gatewayd itself checks the
// whole file when it starts.
func gatewaydUnset(p Plan) string {
	path := p.etc("gatewayd.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	var c struct {
		Mattermost struct {
			URL    string   `toml:"url"`
			Owners []string `toml:"owners"`
		} `toml:"mattermost"`
	}
	if err := toml.Unmarshal(data, &c); err != nil {
		return fmt.Sprintf("%s does not parse: %v", path, err)
	}
	switch {
	case c.Mattermost.URL == "" || c.Mattermost.URL == gatewayPlaceholder:
		return fmt.Sprintf("no Mattermost url in %s", path)
	case len(c.Mattermost.Owners) == 0:
		return fmt.Sprintf("no owners in %s", path)
	}
	token := p.etc("gatewayd.token")
	if fi, err := os.Stat(token); err != nil || fi.Size() == 0 {
		return fmt.Sprintf("no bot token in %s", token)
	}
	return ""
}
