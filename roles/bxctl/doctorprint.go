package bxctl

import (
	"fmt"
	"strings"

	"boxmaker/wire"
)

// doctorReport is doctor's --json: every check, and whether all hold.
type doctorReport struct {
	OK     bool               `json:"ok"`
	Checks []wire.HealthCheck `json:"checks"`
}

// print writes one line per check, "ok: name: detail" or "FAIL: name:
// detail" with the runbook line, then the summary (or, with --json, the
// report), and returns exit status 1 when a check failed.
func (d *doctor) print() error {
	failed := 0
	for _, c := range d.checks {
		if !c.OK {
			failed++
		}
	}
	if d.c.JSON {
		// Printable here too: scripts may show what they read.
		checks := make([]wire.HealthCheck, len(d.checks))
		for i, c := range d.checks {
			checks[i] = wire.HealthCheck{Name: wire.Printable(c.Name), OK: c.OK, Detail: wire.Printable(c.Detail), Runbook: c.Runbook}
		}
		b, err := wire.Marshal(doctorReport{OK: failed == 0, Checks: checks})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(d.e.stdout, "%s\n", b); err != nil {
			return err
		}
	} else {
		var b strings.Builder
		for _, c := range d.checks {
			// Runbook is a line doctor wrote or checked (health): the
			// name and detail may hold anything a role or a file name had.
			name, detail := wire.Printable(c.Name), wire.Printable(c.Detail)
			if c.OK {
				fmt.Fprintf(&b, "ok: %s: %s\n", name, detail)
				continue
			}
			fmt.Fprintf(&b, "FAIL: %s: %s; %s\n", name, strings.TrimSuffix(strings.TrimSuffix(detail, c.Runbook), "; "), c.Runbook)
		}
		if failed == 0 {
			fmt.Fprintf(&b, "doctor: all %d checks ok\n", len(d.checks))
		} else {
			fmt.Fprintf(&b, "doctor: %d of %d checks failed\n", failed, len(d.checks))
		}
		if _, err := fmt.Fprint(d.e.stdout, b.String()); err != nil {
			return err
		}
	}
	if failed > 0 {
		return exitCode(1)
	}
	return nil
}
