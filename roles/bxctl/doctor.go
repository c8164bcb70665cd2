package bxctl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"boxmaker/runbook"
	"boxmaker/wire"
)

// doctor checks a running deployment from the outside, one line per check
// (issue 27): the units, and as root every socket's peer rule; then what
// brokerd and loopd report of themselves on the sockets the owner may use
// (health), and the audit chain against the head brokerd names. The roles
// answer only for what their own access lets them see; doctor adds nothing
// to anyone's access. What a role sends is data: a check name or runbook
// line not in their plain form is replaced, and every detail is printed
// through wire.Printable.

type doctorCmd struct {
	JSON        bool   `name:"json" help:"Print the checks as one JSON object, for scripts."`
	Prefix      string `default:"boxmaker-" help:"Start of the unit names (deploy's --prefix)."`
	Home        string `placeholder:"PATH" help:"BOXMAKER_HOME (default: $BOXMAKER_HOME, else /var/lib/boxmaker)."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
	LoopSocket  string `placeholder:"PATH" help:"loopd's socket (default: $BOXMAKER_HOME/run/owner-loop/loop.sock)."`
}

// doctorUnits are the units doctor asks systemd about, in start order.
var doctorUnits = []string{"tools", "inferproxy", "brokerd", "loopd", "gatewayd"}

type doctor struct {
	c      *doctorCmd
	e      *env
	home   string
	root   bool
	checks []wire.HealthCheck
	// gatewaydOff: its unit is not enabled (no Mattermost), so brokerd
	// not reaching it is expected.
	gatewaydOff bool
}

// Run prints every check and a summary; exit status 1 when any fails.
func (c *doctorCmd) Run(e *env) error {
	euid := e.euid
	if euid == nil {
		euid = os.Geteuid
	}
	d := &doctor{c: c, e: e, home: c.Home, root: euid() == 0}
	if d.home == "" {
		d.home = defaultHome()
	}
	d.units()
	if d.root {
		d.sockets()
	}
	admin := c.AdminSocket
	if admin == "" {
		admin = filepath.Join(d.home, "run", "owner-broker", "admin.sock")
	}
	if rep, ok := d.health("brokerd", admin, runbook.See("admin-unavailable")); ok {
		d.auditChain(rep.Head, true)
	} else if d.root {
		d.auditChain(nil, false)
	}
	loop := c.LoopSocket
	if loop == "" {
		loop = filepath.Join(d.home, "run", "owner-loop", "loop.sock")
	}
	d.health("loopd", loop, runbook.See("loop-unavailable"))
	return d.print()
}

// add records a check; see is its runbook line (runbook.See), said only
// when it fails.
func (d *doctor) add(name string, ok bool, detail, see string) {
	if ok {
		see = ""
	}
	d.checks = append(d.checks, wire.HealthCheck{Name: name, OK: ok, Detail: detail, Runbook: see})
}

// units asks systemd whether each unit is active. gatewayd may be left
// stopped: deploy apply --start starts it only once Mattermost is set.
func (d *doctor) units() {
	command := d.e.command
	if command == nil {
		command = runSystemctl
	}
	for _, role := range doctorUnits {
		unit := d.c.Prefix + role + ".service"
		state, err := command("is-active", unit)
		switch {
		case state == "active":
			d.add("unit "+unit, true, "active", "")
		case errors.Is(err, exec.ErrNotFound):
			d.add("unit "+unit, false, "systemctl is not installed: is this a systemd host?", runbook.See("deploy-start-failed"))
		case role == "gatewayd" && state == "inactive":
			if enabled, _ := command("is-enabled", unit); enabled != "enabled" {
				d.gatewaydOff = true
				d.add("unit "+unit, true, "not enabled: Mattermost is not set up (deploy apply --start starts it once it is)", "")
				continue
			}
			fallthrough
		default:
			d.add("unit "+unit, false, fmt.Sprintf("%s (journalctl -u %s says why)", orUnknown(state), unit), runbook.See("deploy-start-failed"))
		}
	}
}

func runSystemctl(args ...string) (string, error) {
	out, err := exec.Command("systemctl", args...).Output()
	return strings.TrimSpace(string(out)), err
}

// A role's check names and runbook lines are taken only in these forms.
var (
	checkName   = regexp.MustCompile(`^[a-z][a-z0-9 -]{0,39}$`)
	runbookLine = regexp.MustCompile(`^see docs/runbook\.md#[a-z0-9-]{1,64}$`)
)

// health asks a role for its checks and adds them, each named after the
// role. A socket that does not answer is one failed check; as root, one
// that closes the connection (root is not its peer) is said to be
// skipped. fallback is the runbook line of a check whose own is not one.
func (d *doctor) health(role, path, fallback string) (wire.HealthReport, bool) {
	rep, err := askHealth(path)
	if err != nil {
		if d.root && errors.Is(err, errClosed) {
			d.add(role, true, fmt.Sprintf("skipped: %s closes root's connection (not its peer); run bxctl doctor as an owner for %s's own checks", path, role), "")
			return rep, false
		}
		d.add(role, false, fmt.Sprintf("%s: %v", path, err), fallback)
		return rep, false
	}
	for _, c := range rep.Checks {
		if !checkName.MatchString(c.Name) {
			c = wire.HealthCheck{Name: "report", Detail: fmt.Sprintf("%s sent a check named \"%s\", not plain words; its detail: %s",
				role, c.Name, c.Detail)}
		}
		if !c.OK && !runbookLine.MatchString(c.Runbook) {
			c.Runbook = fallback
		}
		if role == "brokerd" && c.Name == "gatewayd" && !c.OK && d.gatewaydOff {
			c.OK, c.Detail = true, "not reached, and not enabled: approvals are answered with bxctl approve and bxctl refuse"
		}
		d.add(role+" "+c.Name, c.OK, c.Detail, c.Runbook)
	}
	return rep, true
}

var errClosed = errors.New("the connection was closed without an answer: this user is not its peer")

func askHealth(path string) (wire.HealthReport, error) {
	conn, err := net.DialTimeout("unix", path, dialTimeout)
	if err != nil {
		return wire.HealthReport{}, err
	}
	defer conn.Close()
	// loopd's checks ask the model and brokerd, 5 s each at most.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if err := wire.WriteEnvelope(conn, wire.Request(1, wire.Health{})); err != nil {
		return wire.HealthReport{}, errClosed
	}
	env, err := wire.ReadEnvelope(conn)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return wire.HealthReport{}, errClosed
		}
		return wire.HealthReport{}, fmt.Errorf("no answer: %w", err)
	}
	switch m := env.Msg.(type) {
	case wire.HealthReport:
		return m, nil
	case wire.WireError:
		return wire.HealthReport{}, fmt.Errorf("refused the health request: %s: %s", m.Code, wire.Printable(m.Detail))
	}
	return wire.HealthReport{}, fmt.Errorf("answered %s to the health request", env.Msg.Kind())
}
