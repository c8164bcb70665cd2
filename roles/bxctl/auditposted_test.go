package bxctl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"boxmaker/audit"
	"boxmaker/wire"
)

// The head gatewayd posts to the owner, checked with `bxctl audit verify
// --head SEQ:HASH` (issue 14).

const seePosted = "see docs/runbook.md#audit-head-posted-mismatch\n"

// writeLog makes a home whose log holds one Recovery record per value in
// torn, stamped by a fixed clock (so two homes written with the same values
// hold the same bytes), with brokerd's head file, and returns each record's
// Entry.
func writeLog(t *testing.T, home string, torn ...uint64) []audit.Entry {
	t.Helper()
	at := time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC)
	w, _, err := audit.Open(filepath.Join(home, "audit"), audit.Options{
		HeadFile: filepath.Join(home, "broker", "audit-head"), Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Entry
	for _, n := range torn {
		e, err := w.AppendEntry(wire.RecoveryEvent{TornBytes: n})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// logLines is the one log file's lines, without their newlines.
func logLines(t *testing.T, home string) (string, [][]byte) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(home, "audit", "*.jsonl"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("log files %v, %v", logs, err)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(logs[0]), bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

func headArg(seq uint64, h wire.Hash32) string { return strconv.FormatUint(seq, 10) + ":" + h.String() }

// TestAuditVerifyPostedHeadMatches: the head as brokerd sends it (seq and
// the hash of that record's line, which the next record's prev holds) is
// accepted, at the end of the log and at a record the log has grown past.
func TestAuditVerifyPostedHeadMatches(t *testing.T) {
	home := t.TempDir()
	entries := writeLog(t, home, 0, 1, 2)
	_, lines := logLines(t, home)
	// The hash is the line's SHA-256, as the chain links it.
	for i, e := range entries {
		sum := sha256.Sum256(lines[i])
		if e.Hash != wire.Hash32(sum) {
			t.Fatalf("entry %d hash %s, line hashes to %x", i, e.Hash, sum)
		}
		if i+1 < len(lines) && !bytes.Contains(lines[i+1], []byte(`"prev":"`+hex.EncodeToString(sum[:])+`"`)) {
			t.Fatalf("line %d does not chain from %x: %s", i+1, sum, lines[i+1])
		}
	}
	headFile := filepath.Join(home, "broker", "audit-head")
	for _, e := range entries {
		arg := headArg(e.Seq, e.Hash)
		code, out, errs := run("audit", "verify", "--home", home, "--head", arg)
		want := "audit: ok, 3 records, head " + entries[2].Hash.String() + "\n" +
			"head: the log holds record 2, which " + headFile + " names\n" +
			"head " + arg + " matches\n"
		if code != 0 || out != want || errs != "" {
			t.Fatalf("--head %s: exit %d, stderr %q, stdout\n%s\nwant\n%s", arg, code, errs, out, want)
		}
	}
}

// TestAuditVerifyPostedHeadRefuses: a head whose hash or seq is not the
// log's, or that lies beyond it, is refused with what differs, its runbook
// line and status 1, after the report of the chain itself.
func TestAuditVerifyPostedHeadRefuses(t *testing.T) {
	home := t.TempDir()
	entries := writeLog(t, home, 0, 1, 2)
	file, _ := logLines(t, home)
	h1, h2 := entries[1].Hash, entries[2].Hash
	flipped := h2
	flipped[31] ^= 1
	ok := "audit: ok, 3 records, head " + h2.String() + "\n" +
		"head: the log holds record 2, which " + filepath.Join(home, "broker", "audit-head") + " names\n"
	for _, tc := range []struct {
		name string
		head string
		want string
	}{
		{"wrong hash", headArg(2, flipped),
			"audit: record 2 (" + file + ":3) hashes to " + h2.String() + ", but the posted head says " + flipped.String() + "\n"},
		{"wrong seq", headArg(1, h2),
			"audit: record 1 (" + file + ":2) hashes to " + h1.String() + ", but the posted head says " + h2.String() + "\n"},
		{"seq beyond the end", headArg(3, h2),
			"audit: the log ends before record 3, which the posted head names (" + h2.String() + "); its next seq is 3\n"},
		{"far beyond", headArg(1<<64-1, h2),
			"audit: the log ends before record 18446744073709551615, which the posted head names (" + h2.String() + "); its next seq is 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run("audit", "verify", "--home", home, "--head", tc.head)
			want := ok + tc.want + seePosted
			if code != 1 || out != want || errs != "" {
				t.Fatalf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs, out, want)
			}
		})
	}
}

// TestAuditVerifyPostedHeadEmptyLog: a posted head names a record, and an
// empty log holds none.
func TestAuditVerifyPostedHeadEmptyLog(t *testing.T) {
	home := t.TempDir()
	writeLog(t, home)
	h := wire.Sha256([]byte("x"))
	code, out, _ := run("audit", "verify", "--home", home, "--head", headArg(0, h))
	want := "audit: ok, 0 records, head none\naudit: the log has no records, but the posted head names record 0 (" +
		h.String() + ")\n" + seePosted
	if code != 1 || out != want {
		t.Fatalf("exit %d, stdout\n%s\nwant\n%s", code, out, want)
	}
}

// TestAuditVerifyPostedHeadCatchesRewrite: a log rewritten from record 2 on,
// with brokerd's head file rewritten to match (what a compromised brokerd
// can do), verifies on its own and against that head file; the head posted
// before the rewrite is what shows it. Records before the rewrite still
// match their posted heads.
func TestAuditVerifyPostedHeadCatchesRewrite(t *testing.T) {
	genuine, forged := t.TempDir(), t.TempDir()
	posted := writeLog(t, genuine, 0, 1, 2, 3)
	rewritten := writeLog(t, forged, 0, 1, 9, 3)
	if posted[1].Hash != rewritten[1].Hash || posted[2].Hash == rewritten[2].Hash {
		t.Fatal("the forged log should share records 0 and 1 with the genuine one and differ from record 2")
	}
	file, _ := logLines(t, forged)
	headFile := filepath.Join(forged, "broker", "audit-head")
	// Alone, the rewrite passes, its head file too.
	code, out, _ := run("audit", "verify", "--home", forged)
	if code != 0 || out != "audit: ok, 4 records, head "+rewritten[3].Hash.String()+"\nhead: the log holds record 3, which "+headFile+" names\n" {
		t.Fatalf("the forged log on its own: exit %d, stdout %q", code, out)
	}
	for _, e := range posted[2:] {
		code, out, _ := run("audit", "verify", "--home", forged, "--head", headArg(e.Seq, e.Hash))
		want := "head: the log holds record 3, which " + headFile + " names\n" +
			"audit: record " + strconv.FormatUint(e.Seq, 10) + " (" + file + ":" + strconv.FormatUint(e.Seq+1, 10) +
			") hashes to " + rewritten[e.Seq].Hash.String() + ", but the posted head says " + e.Hash.String() + "\n" + seePosted
		if code != 1 || !strings.HasSuffix(out, want) || strings.Contains(out, "matches") {
			t.Fatalf("posted %d: exit %d, stdout\n%s\nwant it to end\n%s", e.Seq, code, out, want)
		}
	}
	if code, out, _ := run("audit", "verify", "--home", forged, "--head", headArg(1, posted[1].Hash)); code != 0 ||
		!strings.HasSuffix(out, "head "+headArg(1, posted[1].Hash)+" matches\n") {
		t.Fatalf("record 1 was not rewritten: exit %d, stdout %q", code, out)
	}
}

// TestAuditVerifyPostedHeadBrokenChain: when the chain itself is broken, its
// failure is reported first, and the posted head is still judged against
// the records that verify: one before the break matches, one after it is
// not in the chain. Either way the status is 1.
func TestAuditVerifyPostedHeadBrokenChain(t *testing.T) {
	home := t.TempDir()
	entries := writeLog(t, home, 0, 1, 2)
	file, lines := logLines(t, home)
	// Record 1's event edited: line 3's prev no longer matches.
	lines[1] = bytes.Replace(lines[1], []byte(`"torn_bytes":1`), []byte(`"torn_bytes":7`), 1)
	if err := os.WriteFile(filepath.Join(home, "audit", file), append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run("audit", "verify", "--home", home, "--head", headArg(0, entries[0].Hash))
	if code != 1 || !strings.HasPrefix(out, file+":3: ") || !strings.Contains(out, "see docs/runbook.md#audit-chain-broken\n") ||
		!strings.HasSuffix(out, "head "+headArg(0, entries[0].Hash)+" matches\n") {
		t.Fatalf("a head before the break: exit %d, stdout\n%s", code, out)
	}
	code, out, _ = run("audit", "verify", "--home", home, "--head", headArg(2, entries[2].Hash))
	if code != 1 || !strings.Contains(out, "audit: the chain holds no record 2, which the posted head names ("+
		entries[2].Hash.String()+"): it does not verify past "+file+":3\n"+seePosted) {
		t.Fatalf("a head past the break: exit %d, stdout\n%s", code, out)
	}
}

// TestAuditVerifyPostedHeadMalformed: a --head that is not SEQ:HASH exactly
// as posted is a usage error, said before any log is read, with its reason
// and the runbook line.
func TestAuditVerifyPostedHeadMalformed(t *testing.T) {
	hash := wire.Sha256([]byte("x")).String()
	for _, tc := range []struct{ arg, why string }{
		{"", "there is no colon"},
		{"41" + hash, "there is no colon"},
		{":" + hash, "the seq before the colon is missing"},
		{"041:" + hash, `the seq "041" has a leading zero`},
		{"+41:" + hash, `the seq "+41" is not a decimal number`},
		{"-1:" + hash, `the seq "-1" is not a decimal number`},
		{" 41:" + hash, `the seq " 41" is not a decimal number`},
		{"4_1:" + hash, `the seq "4_1" is not a decimal number`},
		{"18446744073709551616:" + hash, "the seq 18446744073709551616 is larger than any seq"},
		{"41:" + strings.ToUpper(hash), "the hash has uppercase letters"},
		{"41:" + hash[:63], "the hash must be 64 lowercase hex digits"},
		{"41:" + hash + "0", "the hash must be 64 lowercase hex digits"},
		{"41:" + hash[:63] + "g", "the hash must be 64 lowercase hex digits"},
		{"41:" + hash + " ", "the hash must be 64 lowercase hex digits"},
		{"41:" + hash + ":1", "the hash must be 64 lowercase hex digits"},
		{"41:", "the hash must be 64 lowercase hex digits"},
		{"41:\x1b[2J", `not "\u001b[2J" (4 characters)`},
	} {
		// No home: the argument is refused before the log is looked for.
		code, out, errs := run("audit", "verify", "--home", filepath.Join(t.TempDir(), "none"), "--head="+tc.arg)
		if code != 2 || out != "" || !strings.HasPrefix(errs, "bxctl audit verify: --head \"") ||
			!strings.Contains(errs, tc.why) || !strings.HasSuffix(errs, "\n"+seePosted) || strings.Contains(errs, "\x1b") {
			t.Errorf("--head %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.arg, code, out, errs, tc.why)
		}
	}
}
