package bxctl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"boxmaker/audit"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// auditChain verifies the whole log with the verifier audit verify uses.
// From brokerd (an owner's doctor) it holds the log to the head brokerd
// reports: the chain must hold that record, or, with no head, be empty.
// That says the log on disk is the one brokerd writes; it cannot prove
// brokerd honest (bxctl audit verify --head checks the head gatewayd
// posted off the host). Without brokerd (root's doctor) it holds the log
// to brokerd's head file, as brokerd's own start does. Either way the head
// file is compared where this user may read it.
func (d *doctor) auditChain(head *wire.AuditHead, fromBrokerd bool) {
	dir := filepath.Join(d.home, "audit")
	headFile := filepath.Join(d.home, "broker", "audit-head")
	compared := ""
	if _, err := os.Stat(headFile); err != nil {
		headFile, compared = "", fmt.Sprintf("; brokerd's head file (%s) is not readable here: not compared", filepath.Join(d.home, "broker", "audit-head"))
	}
	var (
		rep  audit.ChainReport
		herr *audit.HeadError
		perr *audit.PostedHeadError
		err  error
	)
	if head != nil {
		rep, herr, perr, err = audit.VerifyDirPosted(dir, headFile, *head)
	} else {
		rep, herr, err = audit.VerifyDirHead(dir, headFile)
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			err = fmt.Errorf("%w (an owner may read it: is this user in the owner group?)", err)
		}
		d.add("audit chain", false, firstLine(err.Error()), runbook.See("audit-unavailable"))
		return
	}
	var b bytes.Buffer
	ok, _ := audit.FormatReport(&b, rep)
	first := firstLine(b.String())
	switch {
	case !ok:
		d.add("audit chain", false, first, runbook.See("audit-chain-broken"))
	case herr != nil:
		d.add("audit chain", false, firstLine(herr.Error()), runbook.See("audit-head-mismatch"))
	case perr != nil:
		d.add("audit chain", false, "the head brokerd reports: "+strings.TrimPrefix(firstLine(perr.Error()), "audit: "), runbook.See("audit-head-mismatch"))
	case fromBrokerd && head == nil && rep.Records > 0:
		d.add("audit chain", false, fmt.Sprintf("brokerd reports no head, but the log holds %d records", rep.Records), runbook.See("audit-head-mismatch"))
	case fromBrokerd && head != nil:
		d.add("audit chain", true, fmt.Sprintf("%s; it holds record %d, the head brokerd reports%s", strings.TrimPrefix(first, "audit: ok, "), head.Seq, compared), "")
	default:
		d.add("audit chain", true, strings.TrimPrefix(first, "audit: ok, ")+compared, "")
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
