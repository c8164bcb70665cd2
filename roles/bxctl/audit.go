package bxctl

import (
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

// audit verify reads <home>/audit/ itself with the chain verifier brokerd
// uses (package audit), so it needs no running daemon. The verifying and
// the wording live in package audit; this is only the command.

type auditCmd struct {
	Verify auditVerifyCmd `cmd:"" help:"Verify the whole audit chain; print audit: ok, or the first failure as <file>:<line>: <what>. With --head SEQ:HASH, also check that the chain holds that record (the head gatewayd posts)."`
}

type auditVerifyCmd struct {
	Home string `placeholder:"PATH" help:"BOXMAKER_HOME to read (default: $BOXMAKER_HOME, else /var/lib/boxmaker)."`
	// Head is a pointer so that --head "" is an error, not a check left out.
	Head *string `placeholder:"SEQ:HASH" help:"An audit head kept off the host (gatewayd posts it): the chain must hold the record with seq SEQ, hashing to HASH (64 lowercase hex digits)."`
}

// Run prints "audit: ok, <n> records, head <hex>" and what the owner should
// know (recoveries, accepted breaks and heads, abandoned approvals, clock
// warnings), or the first failure and the runbook pointer with exit status
// 1. Where brokerd keeps a head (<home>/broker/audit-head), the log must
// hold the record it names, as at brokerd's startup; if not, that is printed
// with its runbook pointer, with status 1. With --head SEQ:HASH, the chain
// must also hold record SEQ with hash HASH: "head SEQ:HASH matches", or how
// it differs with its runbook pointer and status 1. A malformed --head is a
// usage error (status 2), said before the log is read. A log that cannot be
// read is its own message, on stderr, also with status 1.
func (c *auditVerifyCmd) Run(e *env) error {
	home := c.Home
	if home == "" {
		home = defaultHome()
	}
	var posted *wire.AuditHead
	if c.Head != nil {
		h, err := parsePostedHead(*c.Head)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s audit verify: --head \"%s\": %v\n%s\n", e.name, wire.Printable(*c.Head), err,
				runbook.See("audit-head-posted-mismatch"))
			return exitCode(usageError)
		}
		posted = &h
	}
	headFile := filepath.Join(home, "broker", "audit-head")
	// Deployed, broker/ is brokerd's alone (deploy plan): the owner reads
	// audit/ but not the head, which brokerd checks at every start. Said,
	// not failed: the head gatewayd posts (--head) is the owner's own check.
	unreadableHead := ""
	if _, err := os.Stat(headFile); errors.Is(err, fs.ErrPermission) {
		unreadableHead = headFile
		headFile = "" // none to compare

	}
	var (
		rep  audit.ChainReport
		herr *audit.HeadError
		perr *audit.PostedHeadError
		err  error
	)
	if posted != nil {
		rep, herr, perr, err = audit.VerifyDirPosted(filepath.Join(home, "audit"), headFile, *posted)
	} else {
		rep, herr, err = audit.VerifyDirHead(filepath.Join(home, "audit"), headFile)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s audit verify: %v\n", e.name, err)
		return exitCode(1)
	}
	ok, err := audit.FormatReport(e.stdout, rep)
	if err != nil {
		return err
	}
	// The log and brokerd's own head first, then the head kept off the
	// host: a rewrite that brought the head file along passes the first.
	var b strings.Builder
	if herr != nil {
		// The same words brokerd's startup would refuse with.
		fmt.Fprintln(&b, herr)
	} else if ok {
		if h, err := audit.ReadHead(headFile); headFile != "" && err == nil && h.Next > 0 {
			fmt.Fprintf(&b, "head: the log holds record %d, which %s names\n", h.Next-1, headFile)
		}
	}
	if unreadableHead != "" {
		fmt.Fprintf(&b, "head: %s is brokerd's and this user cannot read it; brokerd compares it with the log at every start (--head checks a head kept off the host)\n", unreadableHead)
	}
	if perr != nil {
		fmt.Fprintln(&b, perr)
	} else if posted != nil {
		// Said even when something else failed: that the record the
		// owner kept is intact tells where a change can lie.
		fmt.Fprintf(&b, "head %s matches\n", formatPostedHead(*posted))
	}
	if _, err := fmt.Fprint(e.stdout, b.String()); err != nil {
		return err
	}
	if !ok || herr != nil || perr != nil {
		return exitCode(1)
	}
	return nil
}
