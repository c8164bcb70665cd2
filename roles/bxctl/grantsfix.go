package bxctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/sys/unix"

	"boxmaker/policy"
	"boxmaker/runbook"
)

// `grants check --fix` (fixacl.go says what it changes and why): this is
// its command line, which finds who the tools run as from brokerd.toml and
// the system's user files, and the grants and protected paths as the
// offline check finds them.

// defaultBrokerdConfig is where deploy apply writes brokerd.toml.
const defaultBrokerdConfig = "/etc/boxmaker/brokerd.toml"

// defaultToolsUser is brokerd's [podman] user when brokerd.toml names
// none (roles/brokerd/internal/podman.DefaultUser, which a role may not
// import: keep the two equal).
const defaultToolsUser = "65534:65534"

// brokerdConfig is the part of brokerd.toml the fix reads; the rest is
// brokerd's to check, and ignored here.
type brokerdConfig struct {
	Paths struct {
		Home    string `toml:"home"`
		Grants  string `toml:"grants"`
		Secrets string `toml:"secrets"`
		Jobs    string `toml:"jobs"`
	} `toml:"paths"`
	Podman struct {
		Socket string `toml:"socket"`
		User   string `toml:"user"`
		UserNS string `toml:"userns"`
	} `toml:"podman"`
}

// fixUnsupported ends the run before any path is looked at.
func fixUnsupported(e *env, format string, args ...any) error {
	fmt.Fprintf(e.stderr, "%s grants check --fix: %s; %s\n", e.name, fmt.Sprintf(format, args...), runbook.See("grant-fix-unsupported"))
	return exitCode(1)
}

func (c *grantsCheckCmd) runFix(e *env) error {
	if c.AdminSocket != "" {
		fmt.Fprintf(e.stderr, "%s grants check: --fix reads the grants directory itself; --admin-socket does not go with it\n", e.name)
		return exitCode(usageError)
	}
	if !c.DryRun && os.Geteuid() != 0 {
		return fixUnsupported(e, "must run as root (it changes ACLs on the owners' folders); --dry-run shows what it would do")
	}
	cfgPath := c.Config
	if cfgPath == "" {
		cfgPath = defaultBrokerdConfig
	}
	var cfg brokerdConfig
	data, err := os.ReadFile(cfgPath)
	if err == nil {
		err = toml.Unmarshal(data, &cfg)
	}
	if err != nil {
		return fixUnsupported(e, "%s: %v: the tools' uid depends on its [podman] section", cfgPath, err)
	}
	p, err := fixPrincipals(e, c.Prefix, cfg)
	if err != nil {
		return fixUnsupported(e, "%v", err)
	}
	p.dryRun = c.DryRun
	grants := firstOf(c.Grants, cfg.Paths.Grants, "/etc/boxmaker/grants")
	home := firstOf(c.Home, cfg.Paths.Home, defaultHome())
	// What brokerd protects beyond the offline check's set: its config
	// file, its secrets and jobs directories, and the grants directory.
	extra := append([]string{cfgPath, grants}, c.Protect...)
	for _, d := range []string{firstOf(c.Secrets, cfg.Paths.Secrets), cfg.Paths.Jobs} {
		if d != "" {
			extra = append(extra, d)
		}
	}
	if p.protected, err = offlineProtected(home, extra); err != nil {
		return fixUnsupported(e, "%v", err)
	}
	set, problems, err := policy.NewGrantsDir(grants, p.protected).Load()
	if err != nil {
		fmt.Fprintf(e.stderr, "%s grants check: %s: %v\n%s\n", e.name, grants, err, runbook.See("grants-invalid"))
		return exitCode(1)
	}
	if problems != nil {
		// brokerd denies every call under an invalid set: fix the grants
		// first, so no folder is opened up for a grant that will not run.
		for _, pr := range problems {
			fmt.Fprintln(e.stdout, policy.FormatProblem(pr))
		}
		fmt.Fprintf(e.stdout, "grants check --fix: nothing changed: the grants are invalid; %s\n", runbook.See("grants-invalid"))
		return exitCode(1)
	}
	res := fixACLs(p, targetsOf(set.Mounts()), e.stdout)
	fmt.Fprintln(e.stdout, fixSummary(res, c.DryRun))
	if res.refused > 0 {
		return exitCode(1)
	}
	return nil
}

// fixSummary is the run's last line.
func fixSummary(r fixResult, dry bool) string {
	refused := ""
	if r.refused > 0 {
		refused = fmt.Sprintf(", %d %s refused", r.refused, plural(r.refused, "path", "paths"))
	}
	switch {
	case dry:
		return fmt.Sprintf("grants check --fix --dry-run: %d %s to make%s; nothing was changed", r.changes, plural(r.changes, "change", "changes"), refused)
	case r.changes == 0 && r.refused == 0:
		return "grants check --fix: nothing to change: every granted path is already reachable by the tools"
	}
	return fmt.Sprintf("grants check --fix: %d %s made%s", r.changes, plural(r.changes, "change", "changes"), refused)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// fixPrincipals finds the tools' uid on the host, the users that must
// search the folders above a grant path, and the owners' homes.
//
// brokerd's containers run as [podman] user inside the user namespace of
// the tools user's rootless Podman service: container uid n (n >= 1) is
// the tools user's (n-1)th subordinate uid (TestRootlessToolsUser sees
// 65534 land on subuid start + 65533). With userns = "auto" each container
// gets a range of its own, so there is no one uid to give; with "keep-id"
// the mapping is another, not measured here: both are refused.
func fixPrincipals(e *env, prefix string, cfg brokerdConfig) (fixParams, error) {
	var p fixParams
	switch cfg.Podman.UserNS {
	case "":
	case "auto":
		return p, errors.New(`brokerd.toml's [podman] userns = "auto" gives each tool container its own range of host uids, so no one uid can be given the folders`)
	default:
		return p, fmt.Errorf("brokerd.toml's [podman] userns = %q maps the tools' uid in a way this command does not know", cfg.Podman.UserNS)
	}
	inside := firstOf(cfg.Podman.User, defaultToolsUser)
	us, gs, ok := strings.Cut(inside, ":")
	uid, err1 := strconv.ParseUint(us, 10, 32)
	gid, err2 := strconv.ParseUint(gs, 10, 32)
	if !ok || err1 != nil || err2 != nil || uid == 0 {
		return p, fmt.Errorf("brokerd.toml's [podman] user %q is not a numeric uid:gid other than root", inside)
	}
	db, err := readSysDB(firstOf(e.sysEtc, "/etc"))
	if err != nil {
		return p, err
	}
	tools, err := db.user(prefix + "tools")
	if err != nil {
		return p, err
	}
	brokerd, err := db.user(prefix + "brokerd")
	if err != nil {
		return p, err
	}
	if sock, ok := strings.CutPrefix(cfg.Podman.Socket, "unix://"); ok {
		// The service runs as whoever owns its socket (systemd makes it
		// so in the deployment). If that is not the tools user, the
		// mapping below is not the one the containers get.
		var st unix.Stat_t
		if err := unix.Lstat(sock, &st); err == nil && st.Uid != tools.uid {
			return p, fmt.Errorf("the Podman socket %s is owned by uid %d, not by %s (uid %d): the tools do not run in %s's subordinate ids",
				sock, st.Uid, tools.name, tools.uid, tools.name)
		}
	}
	cuid, err := db.subordinate("subuid", tools.name, uint32(uid))
	if err != nil {
		return p, err
	}
	cgid, err := db.subordinate("subgid", tools.name, uint32(gid))
	if err != nil {
		return p, err
	}
	p.container = principal{name: "the tools' uid", uid: cuid, gids: []uint32{cgid}}
	p.walkers = []principal{db.principal(tools), db.principal(brokerd)}
	owners, err := db.members(prefix + "owner")
	if err != nil {
		return p, err
	}
	for _, o := range owners {
		// A home that is "/" or not a clean absolute path would hold
		// everything, or nothing this command could compare: skipped.
		if o.home != "/" && policy.ValidPath(o.home) && filepath.Clean(o.home) == o.home {
			p.owners = append(p.owners, ownerHome{name: o.name, uid: o.uid, home: o.home})
		}
	}
	return p, nil
}
