package harness_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/internal/harness"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// The state e5f67ba, the last release, wrote (testdata/state-e5f67ba,
// whose README says how): its chat session and its job's, as its run left
// them.
const (
	oldState   = "testdata/state-e5f67ba"
	oldSession = "chat-1796677154944"
	oldJob     = "job-digest-1796677155946"
)

// TestStateFromLastRelease: state the last release wrote loads in this
// build and goes on (issue 27, item 4). Every role is this build's binary,
// started on a home holding the old state byte for byte: brokerd's audit
// startup check takes the old chain and head, and new records extend that
// chain; loopd rebuilds the old session's prompt from its log and serves
// the next turn in it; brokerd keeps the old session's taint (untrusted)
// and the old floor (secret); the old notes, their promotion and the old
// job's last run are listed. A format change that this build cannot read
// fails here; the fixture is never rewritten to make it pass.
func TestStateFromLastRelease(t *testing.T) {
	abs, err := filepath.Abs(oldState)
	if err != nil {
		t.Fatal(err)
	}
	h, bodies, log := startRecordedWith(t, harness.Options{State: abs})

	// The old chain verifies as it is, and brokerd's start wrote nothing.
	oldLines := auditLines(t, filepath.Join(abs, "audit"))
	oldHead := lineHash(oldLines[len(oldLines)-1])
	headFile, err := os.ReadFile(filepath.Join(abs, "broker", "audit-head"))
	if err != nil || !strings.Contains(string(headFile), fmt.Sprintf("next=%020d sha256=%s ", len(oldLines), oldHead)) {
		t.Fatalf("the fixture's audit-head %q does not name its last record (%d, %s): %v", headFile, len(oldLines)-1, oldHead, err)
	}
	if got, want := verify(t, h), fmt.Sprintf("audit: ok, %d records, head %s\n", len(oldLines), oldHead); !strings.HasPrefix(got, want) {
		t.Fatalf("audit verify on the old log: %q, want %q", got, want)
	}

	// The old note list, the promotion included.
	list, err := bxctl(t, h, "notes", "list")
	if err != nil {
		t.Fatalf("notes list: %v\n%s", err, list)
	}
	for _, want := range []string{
		`n-9a02a2aae82f  2026-12-07T20:59:15.299Z  private  trusted  session ` + oldSession + `  41 bytes  "Plants"`,
		`n-0690f218e01c  2026-12-07T20:59:15.686Z  private  promoted by root  session ` + oldSession + `  45 bytes  "From the page"`,
		`n-1d157feec977  2026-12-07T20:59:16.086Z  secret  trusted  session ` + oldJob + `  143 bytes  "Job digest, 2026-12-07T20:59:15.945Z"`,
	} {
		if !strings.Contains(list, want) {
			t.Errorf("notes list lacks %q:\n%s", want, list)
		}
	}
	// The old job's last run. jobs.json keeps no run's session, so a
	// restarted brokerd names none.
	if out, err := bxctl(t, h, "jobs"); err != nil ||
		!strings.Contains(out, "digest  every 24h  result note  asks go to the owner  last 2026-12-07T20:59:15.945Z (manual) ok  next ") {
		t.Errorf("bxctl jobs: %v\n%s", err, out)
	}

	// The old session goes on: loopd rebuilds its prompt from the old log
	// (the model is sent the old turns), and brokerd's state for it is the
	// old one: a note it writes is untrusted, because it ran the shell.
	n := len(bodies.all())
	s, out := say(t, h, oldSession, "remember: After the upgrade | the old session goes on label: trusted")
	if s != oldSession || !strings.Contains(out, `"tool":"remember"`) || !strings.Contains(out, `"status":"result"`) {
		t.Fatalf("the old session's turn (session %s):\n%s", s, out)
	}
	sent := bodies.since(n)
	if len(sent) == 0 || !strings.Contains(sent[0], "Fetch a web page for me.") || !strings.Contains(sent[0], "The page says the boat is blue") {
		t.Fatalf("the model was not sent the old session's turns: %q", sent)
	}
	list, err = bxctl(t, h, "notes", "list")
	if err != nil || !strings.Contains(list, "  secret  untrusted  session "+oldSession+`  38 bytes  "After the upgrade"`) {
		t.Fatalf("the old session's new note is not untrusted: %v\n%s", err, list)
	}

	// The old floor is secret (the old job read a secret): a grant that
	// allows only private now denies the old session, whose own taint is
	// private, with taint_too_high, where a fresh home would ask.
	grant := "tool = \"read_file\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"private\"\nuntrusted = false\n\n[constraints]\npaths = [\"" +
		h.Notes() + "\"]\n"
	if err := os.WriteFile(filepath.Join(h.GrantsDir(), "notes-read.toml"), []byte(grant), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, out := say(t, h, oldSession, "What do my notes say?"); !strings.Contains(out, `"reason":"taint_too_high"`) {
		t.Fatalf("the old floor was not kept:\n%s", out)
	}

	// The new records continue the old chain.
	all := auditLines(t, filepath.Join(h.Home, "audit"))
	if len(all) <= len(oldLines) || strings.Join(all[:len(oldLines)], "\n") != strings.Join(oldLines, "\n") {
		t.Fatalf("the old records are not the log's first %d, unchanged", len(oldLines))
	}
	var next wire.AuditRecord
	if err := wire.Unmarshal([]byte(all[len(oldLines)]), &next); err != nil || next.Seq != uint64(len(oldLines)) || hex.EncodeToString(next.Prev[:]) != oldHead {
		t.Fatalf("the first new record does not follow the old head: %v\n%s", err, all[len(oldLines)])
	}
	if got, want := verify(t, h), fmt.Sprintf("audit: ok, %d records, head %s\n", len(all), lineHash(all[len(all)-1])); !strings.HasPrefix(got, want) {
		t.Fatalf("audit verify after the new records: %q, want %q", got, want)
	}

	// Nothing a role tells the owner about damaged or unreadable state:
	// every such line names its runbook entry (session-rebuild-differs,
	// jobs-state-damaged, broker-floor-damaged), and the notes' index,
	// stale or unreadable, is rebuilt. The one runbook line a restart
	// always brings is loopd's cache loss: the model's cache went with
	// the old run's model process.
	cacheLoss := runbook.See("cache-loss")
	seeAny := strings.TrimSuffix(cacheLoss, "cache-loss") // what every runbook line holds
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, cacheLoss) {
			continue
		}
		if strings.Contains(line, seeAny) || strings.Contains(line, "index was missing or damaged") {
			t.Fatalf("a role complained about the old state: %s\n%s", line, log.String())
		}
	}
}

// auditLines are the records of the audit log in dir, ordered by seq:
// its day files' lines. Not by file name alone: a machine whose clock is
// behind the fixture's writes its new records to an earlier day's file.
func auditLines(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no audit log in %s: %v", dir, err)
	}
	bySeq := map[uint64]string{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			var rec wire.AuditRecord
			if err := wire.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bySeq[rec.Seq] = line
		}
	}
	lines := make([]string, len(bySeq))
	for seq, line := range bySeq {
		if seq >= uint64(len(lines)) {
			t.Fatalf("%s: the records' seqs are not 0 to %d", dir, len(lines)-1)
		}
		lines[seq] = line
	}
	return lines
}

// lineHash is a record's hash, as the next record's prev names it: the
// SHA-256 of its line, without the newline.
func lineHash(line string) string {
	sum := sha256.Sum256([]byte(line))
	return hex.EncodeToString(sum[:])
}
