package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The NixOS side (flake.nix, nix/) cannot be built here: nixpkgs is not
// reachable. What can be checked without it is checked: every .nix file
// parses (nix-instantiate --parse needs no nixpkgs), and the pure part of
// the module, nix/plan.nix, is evaluated on the committed plan and held
// against the Go plan (nixplan.go). Debian's nix-bin provides
// nix-instantiate; without it the check fails, never skips.

const nixInstall = "install Debian's nix-bin: apt-get install -y nix-bin (just nix-setup does it)"

// evalCheck is the expression the gate evaluates, relative to the root.
const evalCheck = "nix/eval-check.nix"

func checkNix(dir string) ([]string, error) {
	if _, err := exec.LookPath("nix-instantiate"); err != nil {
		return nil, fmt.Errorf("nix-instantiate is not on PATH: %s", nixInstall)
	}
	problems, err := nixParse(dir)
	if err != nil {
		return nil, err
	}
	more, err := nixPlan(dir)
	if err != nil {
		return nil, err
	}
	return append(problems, more...), nil
}

// nixParse runs nix-instantiate --parse on every tracked .nix file: a
// syntax error is a problem naming the file and nix's message.
func nixParse(dir string) ([]string, error) {
	files, err := trackedFiles(dir, "*.nix")
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, f := range files {
		if _, err := nixInstantiate(dir, "--parse", f); err != nil {
			var perr *nixError
			if !errors.As(err, &perr) {
				return nil, err
			}
			problems = append(problems, fmt.Sprintf("%s does not parse: %s", f, perr.msg))
		}
	}
	return problems, nil
}

// nixError is nix-instantiate's refusal of its input (exit status 1 with a
// message), as opposed to a failure to run it.
type nixError struct{ msg string }

func (e *nixError) Error() string { return e.msg }

// nixInstantiate runs nix-instantiate in dir. Nix wants a writable state
// directory even to parse; a temporary one keeps the machine's alone.
func nixInstantiate(dir string, args ...string) ([]byte, error) {
	state, err := os.MkdirTemp("", "gate-nix-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	cmd := exec.Command("nix-instantiate", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NIX_STATE_DIR="+filepath.Join(state, "state"), "NIX_LOG_DIR="+filepath.Join(state, "log"),
		"NIX_PATH=", "HOME="+state, "XDG_CACHE_HOME="+filepath.Join(state, "cache"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		if msg == "" {
			msg = err.Error()
		}
		return nil, &nixError{msg: msg}
	case err != nil:
		return nil, fmt.Errorf("nix-instantiate: %w (%s)", err, nixInstall)
	}
	return []byte(stdout.String()), nil
}
