package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at link time (-ldflags "-X main.version=v0.1.0") by a
// release build; otherwise the module's build information is used.
var version = ""

var setupUsage = map[string]string{
	"links":   "links DIR\n\nCreate the symlinks loopd, brokerd, gatewayd, inferproxy and bxctl in DIR,\npointing at this executable. Existing correct links are kept; anything else\nalready at one of those names is refused, and nothing is changed.\n",
	"version": "version\n\nPrint the version of this executable and the Go release that built it.\n",
}

// setup runs the owner-only commands links and version. Their command lines
// are too small for a parser.
func setup(prog string, args []string, stdout, stderr io.Writer) int {
	cmd, rest := args[0], args[1:]
	if len(rest) == 1 && (rest[0] == "-h" || rest[0] == "--help") {
		fmt.Fprintf(stdout, "Usage: %s %s", prog, setupUsage[cmd])
		return 0
	}
	switch {
	case cmd == "version" && len(rest) == 0:
		fmt.Fprintf(stdout, "%s %s %s\n", prog, buildVersion(), runtime.Version())
		return 0
	case cmd == "links" && len(rest) == 1 && !strings.HasPrefix(rest[0], "-"):
		if err := links(rest[0], stdout); err != nil {
			fmt.Fprintf(stderr, "%s links: %v\n", prog, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "%s %s: wrong arguments\nUsage: %s %s", prog, cmd, prog, setupUsage[cmd])
	return 2
}

func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}

// links makes dir/<role> a symlink to this executable for every role. It
// checks every name before it creates any, so a refusal changes nothing.
func links(dir string, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this executable: %w", err)
	}
	// Point at the file itself, not at a link to it, and absolutely, so the
	// links work from any working directory.
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("cannot resolve this executable: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	var missing []string
	for _, r := range roles {
		p := filepath.Join(dir, r.name)
		ok, err := linkedTo(p, exe)
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, p)
		}
	}
	for _, p := range missing {
		if err := os.Symlink(exe, p); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s -> %s\n", p, exe)
	}
	if len(missing) == 0 {
		fmt.Fprintf(stdout, "links in %s: ok\n", dir)
	}
	return nil
}

// linkedTo reports whether p is already a symlink to exe (false if p does not
// exist), and refuses anything else found at p.
func linkedTo(p, exe string) (bool, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return false, fmt.Errorf("refusing to replace %s: it exists and is not a symlink to %s; move it away first", p, exe)
	}
	target, err := os.Readlink(p)
	if err != nil {
		return false, err
	}
	if target != exe {
		return false, fmt.Errorf("refusing to replace %s: it points at %s, not %s; remove it first", p, target, exe)
	}
	return true, nil
}
