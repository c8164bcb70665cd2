package deploy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"boxmaker/cmdline"
	"boxmaker/runbook"
)

// Main is `boxmaker deploy ...`: plan, apply and remove.
func Main(name string, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	return cmdline.Run(&grammar{}, args, name, stdout, stderr, e)
}

type env struct{ stdout, stderr io.Writer }

type grammar struct {
	Plan    planCmd    `cmd:"" help:"Print the deployment: users, groups, paths, sockets, units and the access matrix."`
	Apply   applyCmd   `cmd:"" help:"Make this system (Debian or another systemd distribution) match the plan, as root."`
	Upgrade upgradeCmd `cmd:"" help:"Replace the installed boxmaker with a new build and restart the running roles on it, keeping every state; then bxctl doctor."`
	Remove  removeCmd  `cmd:"" help:"Stop and remove what apply made, as root; the state, configuration and accounts stay unless --purge."`
}

// where are the plan's parameters as flags; their defaults are Default().
type where struct {
	Prefix      string `default:"boxmaker-" help:"Start of every user, group and unit name (tests use another)."`
	Home        string `default:"/var/lib/boxmaker" help:"BOXMAKER_HOME."`
	Etc         string `default:"/etc/boxmaker" help:"Configuration, grants and secrets."`
	Bin         string `default:"/usr/local/bin" help:"Where boxmaker is installed; the role links go beside it."`
	UnitDir     string `default:"/etc/systemd/system" help:"Where the unit files go."`
	TmpfilesDir string `default:"/etc/tmpfiles.d" help:"Where the tmpfiles.d file goes."`
}

func (w where) plan() (Plan, error) {
	p := Params(w) // the same fields, with kong's tags in place of JSON's
	if err := p.Check(); err != nil {
		return Plan{}, fmt.Errorf("%w; %s", err, runbook.See("deploy-conflict"))
	}
	return New(p), nil
}

type planCmd struct {
	where
	JSON bool `name:"json" help:"Print it as JSON (what the NixOS module reads: deploy/plan.json)."`
}

func (c *planCmd) Run(e *env) error {
	p, err := c.plan()
	if err != nil {
		return err
	}
	if c.JSON {
		_, err = e.stdout.Write(p.JSON())
		return err
	}
	_, err = io.WriteString(e.stdout, p.Text())
	return err
}

type applyCmd struct {
	where
	DryRun bool     `help:"Print what apply would do; change nothing."`
	Owner  []string `help:"An existing user to add to the owner group (who may run bxctl); repeat for more."`
	Start  bool     `help:"Then start it: reload systemd, start the tools' Podman, build the tool image as brokerd's user, set [podman] image = \"auto\", enable and start the roles, and check that each answers."`
}

func (c *applyCmd) Run(e *env) error {
	p, err := c.plan()
	if err != nil {
		return err
	}
	if err := Apply(p, ApplyOptions{DryRun: c.DryRun, Owners: c.Owner, Out: e.stdout, Self: selfExecutable()}); err != nil {
		fmt.Fprintln(e.stderr, err)
		return cmdline.ExitCode(1)
	}
	if !c.Start {
		return nil
	}
	if err := Start(p, StartOptions{DryRun: c.DryRun, Out: e.stdout}); err != nil {
		fmt.Fprintln(e.stderr, err)
		return cmdline.ExitCode(1)
	}
	return nil
}

// selfExecutable is the running executable, symlinks followed. Without
// /proc (a chroot) it cannot be told: then it is "", apply installs
// nothing (a missing <Bin>/boxmaker is a conflict) and remove deletes no
// <Bin>/boxmaker.
func selfExecutable() string {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return ""
	}
	return self
}

type removeCmd struct {
	where
	DryRun bool `help:"Print what remove would do; change nothing."`
	Purge  bool `help:"Also delete the state (the home: audit log, sessions, notes, the tools' Podman storage), the configuration, grants and secrets, then the users and groups. It prints every path first."`
}

func (c *removeCmd) Run(e *env) error {
	p, err := c.plan()
	if err != nil {
		return err
	}
	if err := Remove(p, RemoveOptions{DryRun: c.DryRun, Purge: c.Purge, Out: e.stdout, Self: selfExecutable()}); err != nil {
		fmt.Fprintln(e.stderr, err)
		return cmdline.ExitCode(1)
	}
	return nil
}

type upgradeCmd struct {
	where
	DryRun bool   `help:"Print the steps; change nothing."`
	New    string `arg:"" name:"NEWBINARY" help:"The new build's boxmaker executable."`
}

func (c *upgradeCmd) Run(e *env) error {
	p, err := c.plan()
	if err != nil {
		return err
	}
	if err := Upgrade(p, UpgradeOptions{New: c.New, DryRun: c.DryRun, Out: e.stdout}); err != nil {
		fmt.Fprintln(e.stderr, err)
		return cmdline.ExitCode(1)
	}
	return nil
}
