package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"

	"github.com/pelletier/go-toml/v2"
)

func (p Plan) unitName(role string) string { return p.Prefix + role + ".service" }
func (p Plan) etc(s ...string) string      { return filepath.Join(append([]string{p.Etc}, s...)...) }

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
	return replaceWith(path, bytes.NewReader(data), func(f *os.File) error {
		if err := chownLike(f, fi); err != nil {
			return err
		}
		return f.Chmod(fi.Mode().Perm())
	})
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
// and mode when there is none (applier.write, which links it into place:
// one written meanwhile is never replaced); one that exists is the
// owner's and is left.
func firstCoreMemory(p Plan) (string, error) {
	path := filepath.Join(p.Home, "memory", "core.md")
	i := slices.IndexFunc(p.Paths, func(q Path) bool { return q.Path == path })
	if i < 0 {
		return "", fmt.Errorf("the plan has no %s", path)
	}
	want := p.Paths[i]
	if _, err := os.Lstat(path); err == nil {
		return ": " + path + " is there, the owner's", nil
	}
	want.Text = ""
	if err := (&applier{plan: p}).write(want); err != nil {
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
