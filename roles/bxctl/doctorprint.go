package bxctl

import (
	"fmt"
	"strings"

	"boxmaker/runbook"
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
		b, err := wire.Marshal(doctorReport{OK: failed == 0, Checks: d.checks})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(d.e.stdout, "%s\n", b); err != nil {
			return err
		}
	} else {
		var b strings.Builder
		for _, c := range d.checks {
			if c.OK {
				fmt.Fprintf(&b, "ok: %s: %s\n", c.Name, wire.Printable(c.Detail))
				continue
			}
			// A role's detail may already end with its runbook line.
			detail, see := wire.Printable(c.Detail), runbook.See(c.Runbook)
			detail = strings.TrimSuffix(strings.TrimSuffix(detail, see), "; ")
			fmt.Fprintf(&b, "FAIL: %s: %s; %s\n", c.Name, detail, see)
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
