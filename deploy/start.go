package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"boxmaker/runbook"
)

// StartOptions are deploy apply --start's choices.
type StartOptions struct {
	// DryRun prints the steps and runs none.
	DryRun bool
	// Out receives one line per step.
	Out io.Writer
	// Command runs a program as root and returns what it wrote to stdout
	// and stderr. nil runs it (os/exec); tests stand in for systemd.
	Command func(name string, args ...string) (stdout, stderr []byte, err error)
	// Wait bounds how long the started roles have, all together, to become
	// active and open their sockets (30 s if zero).
	Wait time.Duration
}

// startStep is one line of --start: what it does, the unit whose journal
// explains a failure ("" when none does), and the work.
type startStep struct {
	what string
	unit string
	do   func() (string, error) // returns what the line adds after "ok: what"
}

// Start brings up an applied plan, as root: systemd reloads the units, the
// tools unit (rootless Podman) starts, the tool image is built (or found,
// by content) as brokerd's user and brokerd.toml set to find it (image =
// "auto"), the roles the configuration allows are enabled and started, and
// each must be active with its sockets open. Each step prints one line; the
// first failure stops it, naming the unit, its last journal lines and the
// runbook entry.
func Start(p Plan, opts StartOptions) error {
	opts = opts.withDefaults()
	if !opts.DryRun && os.Geteuid() != 0 {
		return fmt.Errorf("deploy apply --start: must run as root (it starts system units); %s", runbook.See("deploy-not-root"))
	}
	s := &starter{p: p, opts: opts, answered: map[string]bool{}}
	return runSteps(s.steps(), opts.DryRun, opts.Out, s.failure)
}

// withDefaults fills in what was left zero: no output, the real commands,
// 30 s for the roles to answer.
func (o StartOptions) withDefaults() StartOptions {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Command == nil {
		o.Command = runCommand
	}
	if o.Wait == 0 {
		o.Wait = 30 * time.Second
	}
	return o
}

// runSteps prints one line per step: "would ..." for a dry run, else
// "ok: ..." with what the step adds, or "failed: ..." and the step's
// failure (failure), which ends the run.
func runSteps(steps []startStep, dry bool, out io.Writer, failure func(startStep, error) error) error {
	for _, st := range steps {
		if dry {
			fmt.Fprintf(out, "would %s\n", st.what)
			continue
		}
		more, err := st.do()
		if err != nil {
			fmt.Fprintf(out, "failed: %s\n", st.what)
			return failure(st, err)
		}
		fmt.Fprintf(out, "ok: %s%s\n", st.what, more)
	}
	return nil
}

type starter struct {
	p        Plan
	opts     StartOptions
	started  []string        // the roles enabled and started, in order
	answered map[string]bool // the sockets that accepted a connection
	imageID  string          // what buildImage built or found
}

// startRoles are the roles --start enables, in the order their units
// depend on each other (loopd needs inferproxy and brokerd; gatewayd both).
var startRoles = []string{"inferproxy", "brokerd", "loopd", "gatewayd"}

func (s *starter) steps() []startStep {
	tools := s.p.unitName("tools")
	steps := []startStep{
		{"reload systemd's units (systemctl daemon-reload)", "", func() (string, error) {
			return "", s.systemctl("daemon-reload")
		}},
		{"start " + tools + " (rootless Podman for the tool containers)", tools, func() (string, error) {
			return "", s.systemctl("start", tools)
		}},
		{"build the tool image as " + s.p.UserFor("brokerd"), tools, s.buildImage},
		{"set [podman] image = \"auto\" in " + s.p.etc("brokerd.toml"), "", func() (string, error) {
			return setAutoImage(s.p.etc("brokerd.toml"))
		}},
		{"make sure the core memory exists (loopd starts no session without it)", "", func() (string, error) {
			return firstCoreMemory(s.p)
		}},
	}
	for _, role := range startRoles {
		unit := s.p.unitName(role)
		if role == "gatewayd" {
			if why := gatewaydUnset(s.p); why != "" {
				steps = append(steps, startStep{"leave " + unit + " stopped: " + why, "", func() (string, error) { return "", nil }})
				continue
			}
		}
		steps = append(steps, startStep{"enable and start " + unit, unit, func() (string, error) {
			if err := s.systemctl("enable", "--now", unit); err != nil {
				return "", err
			}
			s.started = append(s.started, role)
			return "", nil
		}})
	}
	return append(steps, startStep{"check that every started role is active and answers on its sockets", "", s.health})
}

// buildImage runs brokerd image build as brokerd's user, against the
// Podman socket its brokerd.toml names, and reports the image.
func (s *starter) buildImage() (string, error) {
	return s.buildImageWith(filepath.Join(s.p.Bin, "brokerd"))
}

// buildImageWith is buildImage with the brokerd command given: deploy
// upgrade builds with the new build before installing it.
func (s *starter) buildImageWith(brokerd ...string) (string, error) {
	args := append(append([]string{"-u", s.p.UserFor("brokerd"), "--"}, brokerd...), "image", "build", "--config", s.p.etc("brokerd.toml"))
	out, errs, err := s.opts.Command("runuser", args...)
	if err != nil {
		return "", fmt.Errorf("brokerd image build: %v: %s", err, lastLines(errs, 5))
	}
	id := strings.TrimSpace(string(out))
	if !imageIDForm.MatchString(id) {
		return "", fmt.Errorf("brokerd image build printed %q, not an image id (sha256: and 64 hex digits)", lastLines(out, 1))
	}
	s.imageID = id
	how := "built"
	if bytes.Contains(errs, []byte("already imported")) {
		how = "found, built before from the same files"
	}
	return fmt.Sprintf(": %s (%s)", id, how), nil
}

var imageIDForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// health waits until each started role's unit is active and each socket it
// listens on accepts a connection. A unit found failed or stopped is reported at
// once; one restarting after a crash (activating) when it fails for good
// or at the deadline.
func (s *starter) health() (string, error) {
	deadline := time.Now().Add(s.opts.Wait)
	for _, role := range s.started {
		unit := s.p.unitName(role)
		for {
			state, _, _ := s.opts.Command("systemctl", "is-active", unit)
			st := strings.TrimSpace(string(state))
			err := s.socketsAnswer(role)
			if st == "active" && err == nil {
				break
			}
			if st == "failed" || st == "inactive" || time.Now().After(deadline) {
				if err == nil {
					err = fmt.Errorf("the unit is %s", st)
				}
				return "", &unitError{unit, err}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return fmt.Sprintf(": %s", strings.Join(s.started, ", ")), nil
}

// socketsAnswer says which of role's sockets does not accept a connection.
// Each is dialled only until it answers once: root is no listener's peer,
// so each connection is logged as a refused peer (docs/runbook.md
// #peer-refused), and one line per socket is enough. (The kernel's table
// of Unix sockets cannot replace the dial: a listener bound under a
// temporary name and renamed is listed under that name, and loopd's are in
// its own network namespace.)
func (s *starter) socketsAnswer(role string) error {
	for _, sk := range s.p.Sockets {
		if sk.Listener != s.p.UserFor(role) || s.answered[sk.Path] {
			continue
		}
		c, err := net.DialTimeout("unix", sk.Path, time.Second)
		if err != nil {
			return fmt.Errorf("its socket %s does not answer: %w", sk.Path, err)
		}
		c.Close()
		s.answered[sk.Path] = true
	}
	return nil
}

// unitError is a failure that unit's journal explains.
type unitError struct {
	unit string
	err  error
}

func (e *unitError) Error() string { return e.unit + ": " + e.err.Error() }
func (e *unitError) Unwrap() error { return e.err }

// failure is step st's error, with the journal of the unit that explains it.
func (s *starter) failure(st startStep, err error) error {
	unit := st.unit
	if ue := (*unitError)(nil); errors.As(err, &ue) {
		unit = ue.unit
	}
	msg := fmt.Sprintf("deploy apply --start: %s: %v", st.what, err)
	if unit != "" {
		journal, _, jerr := s.opts.Command("journalctl", "-u", unit, "-n", "15", "--no-pager", "-o", "cat")
		if jerr != nil || len(bytes.TrimSpace(journal)) == 0 {
			msg += fmt.Sprintf("\n  %s: its journal is empty or unreadable (journalctl -u %s)", unit, unit)
		} else {
			msg += fmt.Sprintf("\n  the last lines of journalctl -u %s:\n%s", unit, indent(lastLines(journal, 15), "    "))
		}
	}
	return fmt.Errorf("%s\n%s", msg, runbook.See("deploy-start-failed"))
}

func (s *starter) systemctl(args ...string) error {
	if _, errs, err := s.opts.Command("systemctl", args...); err != nil {
		return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, lastLines(errs, 5))
	}
	return nil
}

func runCommand(name string, args ...string) ([]byte, []byte, error) {
	var out, errs bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	return out.Bytes(), errs.Bytes(), err
}

// lastLines is the last n lines of b, trimmed.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func indent(s, by string) string { return by + strings.ReplaceAll(s, "\n", "\n"+by) }
