package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"boxmaker/runbook"
)

// UpgradeOptions are deploy upgrade's choices.
type UpgradeOptions struct {
	// New is the new build's boxmaker executable.
	New string
	// DryRun prints the steps and runs none.
	DryRun bool
	// Out receives one line per step.
	Out io.Writer
	// Command runs a program as root (StartOptions.Command).
	Command func(name string, args ...string) (stdout, stderr []byte, err error)
	// Wait bounds how long the restarted roles have to answer (30 s if zero).
	Wait time.Duration
}

// upgradeRoles are restarted in this order: what the others use first
// (loopd asks inferproxy and brokerd, gatewayd asks loopd), so each role
// comes back to find its servers already on the new build.
var upgradeRoles = []string{"inferproxy", "brokerd", "loopd", "gatewayd"}

// Upgrade replaces an applied plan's binary with a new build and brings
// the running roles onto it, as root: a copy of the new build beside
// <Bin>/boxmaker must run (its deploy plan), that copy is renamed over
// <Bin>/boxmaker, the new
// build's deploy apply makes what its plan adds, systemd reloads, the tool
// image is rebuilt from the new binary (brokerd's image = "auto" finds it
// by content), each running role restarts in dependency order, each must
// answer again, and bxctl doctor must pass. State is never touched: the
// audit chain, sessions, notes and approvals' records stay where they are
// and the new build reads them. A role that was not running is left so.
func Upgrade(p Plan, opts UpgradeOptions) error {
	if !opts.DryRun && os.Geteuid() != 0 {
		return fmt.Errorf("deploy upgrade: must run as root (it replaces the binary and restarts system units); %s", runbook.See("deploy-not-root"))
	}
	so := StartOptions{DryRun: opts.DryRun, Out: opts.Out, Command: opts.Command, Wait: opts.Wait}.withDefaults()
	s := &starter{p: p, opts: so, answered: map[string]bool{}}
	u := &upgrader{starter: s, src: opts.New, dst: filepath.Join(p.Bin, "boxmaker")}
	defer u.unstage()
	return runSteps(u.steps(), so.DryRun, so.Out, u.failure)
}

type upgrader struct {
	*starter
	src, dst string
	// staged is the new build copied beside dst under a temporary name
	// (stage): the file checked is the file installed, whatever happens
	// to src meanwhile. "" once renamed over dst or removed.
	staged string
}

func (u *upgrader) steps() []startStep {
	// Everything that can refuse for what the new build is or what the
	// configuration says comes before the rename: until then the old build
	// is the one any role starts.
	steps := []startStep{
		{"copy " + u.src + " into " + u.p.Bin + " and check that the copy is a boxmaker build for this deployment (its deploy plan --json)", "", u.checkNew},
		{"build the tool image with the new build as " + u.p.UserFor("brokerd"), u.p.unitName("tools"), func() (string, error) {
			return u.buildImageWith(u.staged, "brokerd")
		}},
		{"check that brokerd will run that image (" + u.p.etc("brokerd.toml") + ")", "", u.checkImage},
		{"install the new build as " + u.dst + " (one rename; running roles keep the old build until they restart)", "", u.install},
		{"make what the new build's plan adds (" + u.dst + " deploy apply)", "", u.apply},
		{"reload systemd's units (systemctl daemon-reload)", "", func() (string, error) { return "", u.systemctl("daemon-reload") }},
	}
	for _, role := range upgradeRoles {
		unit := u.p.unitName(role)
		what := "restart " + unit + " if it runs"
		if role == "brokerd" {
			what += " (its pending approvals end as abandoned, as audit verify reports; the calls waiting on them fail)"
		}
		steps = append(steps, startStep{what, unit, func() (string, error) {
			state, _, _ := u.opts.Command("systemctl", "is-active", unit)
			if st := strings.TrimSpace(string(state)); st != "active" {
				return fmt.Sprintf(": left %s", stateWord(st)), nil
			}
			if err := u.systemctl("restart", unit); err != nil {
				return "", err
			}
			u.started = append(u.started, role)
			return "", nil
		}})
	}
	return append(steps,
		startStep{"check that every restarted role is active and answers on its sockets", "", u.health},
		startStep{"check the deployment (" + filepath.Join(u.p.Bin, "bxctl") + " doctor)", "", u.doctor})
}

func stateWord(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// whereArgs are the plan's parameters as the flags of the new build's
// deploy commands, so it works on the same deployment.
func (u *upgrader) whereArgs() []string {
	p := u.p.Params
	return []string{"--prefix=" + p.Prefix, "--home=" + p.Home, "--etc=" + p.Etc, "--bin=" + p.Bin,
		"--unit-dir=" + p.UnitDir, "--tmpfiles-dir=" + p.TmpfilesDir}
}

// checkNew refuses what is not a plain executable file, and a file whose
// deploy plan --json is not this deployment's plan: installing it would
// stop every role.
func (u *upgrader) checkNew() (string, error) {
	if err := u.stage(); err != nil {
		return "", err
	}
	out, errs, err := u.opts.Command(u.staged, append([]string{"deploy", "plan", "--json"}, u.whereArgs()...)...)
	if err != nil {
		return "", fmt.Errorf("%s deploy plan (a copy of %s): %v: %s", u.staged, u.src, err, lastLines(errs, 5))
	}
	var theirs struct {
		Params
		Units []struct {
			Name string `json:"name"`
		} `json:"units"`
	}
	if err := json.Unmarshal(out, &theirs); err != nil || len(theirs.Units) == 0 {
		return "", fmt.Errorf("%s deploy plan --json printed no plan (%v): is it a boxmaker build?", u.src, err)
	}
	if theirs.Params != u.p.Params {
		return "", fmt.Errorf("%s plans another deployment (%+v, not %+v)", u.src, theirs.Params, u.p.Params)
	}
	return "", nil
}

// stage copies src beside dst, root's and 0755, synced. src is opened
// without following a link or waiting on a FIFO, and must be a plain
// executable file.
func (u *upgrader) stage() error {
	in, err := os.OpenFile(u.src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link: name the build's file itself", u.src)
	}
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s): name the build's file itself", u.src, fi.Mode().Type())
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", u.src)
	}
	tmp, err := os.CreateTemp(u.p.Bin, ".boxmaker.upgrade.*")
	if err != nil {
		return err
	}
	u.staged = tmp.Name()
	_, err = io.Copy(tmp, in)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	return errors.Join(err, tmp.Close())
}

func (u *upgrader) unstage() {
	if u.staged != "" {
		os.Remove(u.staged)
		u.staged = ""
	}
}

// install renames the checked copy over dst: a role starting meanwhile
// runs the old build or the new one, never half of one.
func (u *upgrader) install() (string, error) {
	mine, err1 := os.ReadFile(u.staged)
	there, err2 := os.ReadFile(u.dst)
	if err1 != nil {
		return "", err1
	}
	if err2 == nil && bytes.Equal(mine, there) {
		u.unstage()
		return ": already installed", nil
	}
	if err := os.Rename(u.staged, u.dst); err != nil {
		return "", err
	}
	u.staged = ""
	return "", nil
}

// apply runs the new build's own deploy apply: its plan may add users,
// paths or units, and it refuses (changing nothing) where the system
// differs from that plan.
func (u *upgrader) apply() (string, error) {
	out, errs, err := u.opts.Command(u.dst, append([]string{"deploy", "apply"}, u.whereArgs()...)...)
	if err != nil {
		return "", fmt.Errorf("%s deploy apply: %v:\n%s", u.dst, err, indent(lastLines(errs, 20), "    "))
	}
	return ": " + lastLines(out, 1), nil
}

// doctor runs the new build's bxctl doctor as root: the units and every
// socket's peer rule (an owner's doctor adds brokerd's and loopd's own).
func (u *upgrader) doctor() (string, error) {
	out, _, err := u.opts.Command(filepath.Join(u.p.Bin, "bxctl"), "doctor", "--prefix="+u.p.Prefix, "--home="+u.p.Home)
	if err != nil {
		var failed []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "FAIL: ") {
				failed = append(failed, l)
			}
		}
		return "", fmt.Errorf("bxctl doctor: %v:\n%s", err, indent(strings.Join(failed, "\n"), "    "))
	}
	return ": " + lastLines(out, 1), nil
}

// checkImage refuses to restart brokerd onto an image id the owner set that
// is not the new build's: the calls would run the old build's toolkit.
// The seed's empty value becomes "auto", as --start makes it.
func (u *upgrader) checkImage() (string, error) {
	data, err := os.ReadFile(u.p.etc("brokerd.toml"))
	if err != nil {
		return "", err
	}
	m := imageLine.FindAllSubmatch(data, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("%s has %d lines `image = \"...\"` (in [podman]), not one", u.p.etc("brokerd.toml"), len(m))
	}
	switch value := strings.Trim(string(m[0][1]), `"`); value {
	case "auto":
		return ": image = \"auto\" finds it", nil
	case "":
		return setAutoImage(u.p.etc("brokerd.toml"))
	case u.imageID:
		return ": brokerd.toml names it", nil
	default:
		return "", fmt.Errorf("brokerd.toml names the image %s, not the new build's %s: brokerd would run the old build's toolkit in every call; set image = \"auto\" there (or the new id), then run deploy upgrade again", value, u.imageID)
	}
}

// failure is Start's failure message, with upgrade's runbook entry: the
// new binary may be installed while some roles still run the old one.
func (u *upgrader) failure(st startStep, err error) error {
	msg := u.starter.failure(st, err).Error()
	msg = strings.Replace(msg, "deploy apply --start: ", "deploy upgrade: ", 1)
	msg = strings.Replace(msg, runbook.See("deploy-start-failed"), runbook.See("deploy-upgrade-failed"), 1)
	return fmt.Errorf("%s", msg)
}
