package deploy

import (
	"path/filepath"
	"strings"
	"time"
)

// removeAndReinstall is issue 27's uninstall under a booted systemd, after
// the owner's chats: `deploy remove` (the installed build) stops every unit
// and takes its file away, keeping the state; run again (from the build, as
// the installed one is gone) it has nothing to remove; --purge is refused
// here, since the tools' storage is a mount (the test's bind) and would be
// emptied; and `deploy apply --start` brings the deployment back on the
// kept state, with the audit chain that was there.
func (w *world) removeAndReinstall() string {
	w.t.Helper()
	removed, err := w.c.within(2*time.Minute, filepath.Join(w.plan.Bin, "boxmaker"), "deploy", "remove")
	if err != nil || !strings.HasSuffix(removed, " changes made") {
		w.t.Fatalf("deploy remove: %v\n%s", err, removed)
	}
	for _, line := range []string{"stop and disable " + w.unit("loopd") + "\n", "stop " + w.unit("tools") + "\n",
		"reload systemd's units (systemctl daemon-reload)\n", "remove " + w.plan.Bin + "/boxmaker\n", "kept " + w.plan.Home + ": "} {
		if !strings.Contains(removed, line) {
			w.t.Errorf("deploy remove printed no %q:\n%s", line, removed)
		}
	}
	for _, role := range stopRoles {
		if st, _ := w.c.out("systemctl", "is-active", w.unit(role)); st != "inactive" && st != "failed" {
			w.t.Errorf("%s is %q after deploy remove", w.unit(role), st)
		}
		if st, _ := w.c.out("systemctl", "is-enabled", w.unit(role)); st != "" {
			w.t.Errorf("%s is-enabled says %q after deploy remove", w.unit(role), st)
		}
	}
	if again, err := w.c.within(time.Minute, "/opt/build/boxmaker", "deploy", "remove"); err != nil || !strings.HasSuffix(again, "nothing to remove: no unit, link or executable of the plan is left") {
		w.t.Errorf("deploy remove again: %v\n%s", err, again)
	}
	if purge, err := w.c.within(time.Minute, "/opt/build/boxmaker", "deploy", "remove", "--purge"); err == nil ||
		!strings.Contains(purge, " is a mount point in "+w.plan.Home+"/tools") || !strings.Contains(purge, "nothing was changed") {
		w.t.Errorf("deploy remove --purge with the tools' storage mounted: %v\n%s", err, purge)
	}
	out, err := w.c.within(5*time.Minute, "/opt/build/boxmaker", "deploy", "apply", "--start", "--owner", treeOwner)
	if err != nil || !strings.HasSuffix(out, "ok: check that every started role is active and answers on its sockets: inferproxy, brokerd, loopd") ||
		strings.Contains(out, "create user") || !strings.Contains(out, "(found, built before from the same files)") {
		w.t.Fatalf("deploy apply --start after deploy remove: %v\n%s\n%s", err, out, w.c.journal(w.unit("brokerd")))
	}
	return removed
}
