package bxctl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"boxmaker/audit"
	"boxmaker/wire"
)

// doctor checks a running deployment from the outside, one line per check
// (issue 27): the units, and as root every socket's peer rule; then what
// brokerd and loopd report of themselves on the sockets the owner may use
// (health), and the audit chain against the head brokerd names. The roles
// answer only for what their own access lets them see; doctor adds nothing
// to anyone's access.

type doctorCmd struct {
	JSON        bool   `name:"json" help:"Print the checks as one JSON object, for scripts."`
	Prefix      string `default:"boxmaker-" help:"Start of the unit names (deploy's --prefix)."`
	Home        string `placeholder:"PATH" help:"BOXMAKER_HOME (default: $BOXMAKER_HOME, else /var/lib/boxmaker)."`
	AdminSocket string `placeholder:"PATH" help:"brokerd's admin socket (default: $BOXMAKER_HOME/run/owner-broker/admin.sock)."`
	LoopSocket  string `placeholder:"PATH" help:"loopd's socket (default: $BOXMAKER_HOME/run/owner-loop/loop.sock)."`
}

// doctorUnits are the units doctor asks systemd about, in start order.
var doctorUnits = []string{"tools", "inferproxy", "brokerd", "loopd", "gatewayd"}

// peerWait is how long a socket has to close a connection from root, which
// no [peers] rule names: a listener that keeps it open let root in.
const peerWait = 2 * time.Second

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
	if rep, ok := d.health("brokerd", admin); ok {
		d.auditChain(rep.Head)
	}
	loop := c.LoopSocket
	if loop == "" {
		loop = filepath.Join(d.home, "run", "owner-loop", "loop.sock")
	}
	d.health("loopd", loop)
	return d.print()
}

func (d *doctor) add(name string, ok bool, detail, anchor string) {
	if ok {
		anchor = ""
	}
	d.checks = append(d.checks, wire.HealthCheck{Name: name, OK: ok, Detail: detail, Runbook: anchor})
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
			d.add("unit "+unit, false, "systemctl is not installed: is this a systemd host?", "deploy-start-failed")
		case role == "gatewayd" && state == "inactive":
			if enabled, _ := command("is-enabled", unit); enabled != "enabled" {
				d.gatewaydOff = true
				d.add("unit "+unit, true, "not enabled: Mattermost is not set up (deploy apply --start starts it once it is)", "")
				continue
			}
			fallthrough
		default:
			d.add("unit "+unit, false, fmt.Sprintf("%s (journalctl -u %s says why)", orUnknown(state), unit), "deploy-start-failed")
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func runSystemctl(args ...string) (string, error) {
	out, err := exec.Command("systemctl", args...).Output()
	return strings.TrimSpace(string(out)), err
}

// sockets, as root, dials every socket under <home>/run: each must answer,
// and each with a [peers] rule must close root's connection before any
// byte (unixsock refuses a peer it does not name). Podman's socket checks
// no peer; the modes of its directory guard it.
func (d *doctor) sockets() {
	paths, _ := filepath.Glob(filepath.Join(d.home, "run", "*", "*.sock"))
	if len(paths) == 0 {
		d.add("sockets", false, "no socket under "+filepath.Join(d.home, "run"), "socket-unavailable")
	}
	for _, p := range paths {
		name := "socket " + p
		c, err := net.DialTimeout("unix", p, time.Second)
		if err != nil {
			d.add(name, false, "does not answer: "+err.Error(), "socket-unavailable")
			continue
		}
		if filepath.Base(p) == "podman.sock" {
			c.Close()
			d.add(name, true, "answers (Podman checks no peer: the modes of its directory guard it)", "")
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(peerWait))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			d.add(name, false, "let root in: its [peers] rule admits a user it should not", "peer-refused")
			continue
		}
		d.add(name, true, "answers, and its [peers] rule refuses root", "")
	}
}

// health asks a role for its checks and adds them, each named after the
// role. A socket that refuses the connection (not its peer) or does not
// answer is one failed check.
func (d *doctor) health(role, path string) (wire.HealthReport, bool) {
	rep, err := askHealth(path)
	if err != nil {
		anchor := "admin-unavailable"
		if role == "loopd" {
			anchor = "loop-unavailable"
		}
		if d.root && errors.Is(err, errClosed) {
			d.add(role, true, fmt.Sprintf("skipped: %s closes root's connection (not its peer); run bxctl doctor as an owner for %s's own checks", path, role), "")
			return rep, false
		}
		d.add(role, false, fmt.Sprintf("%s: %v", path, err), anchor)
		return rep, false
	}
	for _, c := range rep.Checks {
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

// auditChain verifies the whole log against the head brokerd reported:
// the chain must hold that record. brokerd's own head file is compared
// too where this user may read it (root).
func (d *doctor) auditChain(head *wire.AuditHead) {
	dir := filepath.Join(d.home, "audit")
	if head == nil {
		d.add("audit chain", true, "the log is empty", "")
		return
	}
	headFile := filepath.Join(d.home, "broker", "audit-head")
	if _, err := os.Stat(headFile); err != nil {
		headFile = ""
	}
	rep, herr, perr, err := audit.VerifyDirPosted(dir, headFile, *head)
	if err != nil {
		anchor := "audit-unavailable"
		if errors.Is(err, fs.ErrPermission) {
			err = fmt.Errorf("%w (an owner may read it: is this user in the owner group?)", err)
		}
		d.add("audit chain", false, err.Error(), anchor)
		return
	}
	var b bytes.Buffer
	ok, _ := audit.FormatReport(&b, rep)
	first, _, _ := strings.Cut(b.String(), "\n")
	switch {
	case !ok:
		d.add("audit chain", false, first, "audit-chain-broken")
	case herr != nil:
		d.add("audit chain", false, herr.Error(), "audit-head-mismatch")
	case perr != nil:
		d.add("audit chain", false, perr.Error(), "audit-head-posted-mismatch")
	default:
		d.add("audit chain", true, fmt.Sprintf("%s; it holds record %d, brokerd's head", strings.TrimPrefix(first, "audit: ok, "), head.Seq), "")
	}
}
