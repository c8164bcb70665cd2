package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/audit"
	"boxmaker/wire"
)

// The audit log's head, kept outside the log (<home>/broker/audit-head):
// brokerd writes a log with real calls, stops, the log or the head is
// tampered with, and brokerd starts again. Each way of losing the end of
// the log verifies as a chain, so only the head can tell.

// headCase is one way of tampering; want is the runbook line startup must
// refuse with ("" if it must start).
type headCase struct {
	name   string
	tamper func(t *testing.T, log, head string, early []byte)
	want   string
}

var headCases = []headCase{
	{"last records removed", func(t *testing.T, log, _ string, _ []byte) {
		editLog(t, log, func(l []string) []string { return l[:len(l)-2] })
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"last record removed", func(t *testing.T, log, _ string, _ []byte) {
		editLog(t, log, func(l []string) []string { return l[:len(l)-1] })
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"last record edited", func(t *testing.T, log, _ string, _ []byte) {
		editLog(t, log, func(l []string) []string {
			l[len(l)-1] = strings.Replace(l[len(l)-1], "/data/none/4.md", "/data/none/0.md", 1)
			return l
		})
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"directory emptied", func(t *testing.T, log, _ string, _ []byte) {
		names, _ := filepath.Glob(filepath.Join(log, "*.jsonl"))
		for _, n := range names {
			if err := os.Remove(n); err != nil {
				t.Fatal(err)
			}
		}
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"directory removed", func(t *testing.T, log, _ string, _ []byte) {
		if err := os.RemoveAll(log); err != nil {
			t.Fatal(err)
		}
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"re-chained from seq 0", func(t *testing.T, log, _ string, _ []byte) {
		// The first call's path changed, and every record after it given
		// the prev it now needs: a chain that verifies from the start.
		editLog(t, log, func(l []string) []string {
			l[0] = strings.Replace(l[0], "/data/none/0.md", "/data/none/9.md", 1)
			return rechainAll(t, l)
		})
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"re-chained and cut", func(t *testing.T, log, _ string, _ []byte) {
		editLog(t, log, func(l []string) []string { return rechainAll(t, l[:3]) })
	}, "see docs/runbook.md#audit-head-mismatch"},
	{"head missing", func(t *testing.T, _, head string, _ []byte) {
		if err := os.Remove(head); err != nil {
			t.Fatal(err)
		}
	}, "see docs/runbook.md#audit-head-missing"},
	// Both gone looks like a first start, but brokerd's session state and
	// taint floor show it is not.
	{"head removed and directory emptied", func(t *testing.T, log, head string, _ []byte) {
		// The calls here are denials, which leave no state; a session's
		// state file is what the first result of a real session leaves.
		state := filepath.Join(filepath.Dir(head), "sessions", "head-1.json")
		if err := os.WriteFile(state, []byte(`{"taint":"private","untrusted":false}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(head); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(log); err != nil {
			t.Fatal(err)
		}
	}, "see docs/runbook.md#audit-head-missing"},
	{"head damaged", func(t *testing.T, _, head string, _ []byte) {
		b, err := os.ReadFile(head)
		if err != nil {
			t.Fatal(err)
		}
		b[30] ^= 1 // a digit of the seq: still a number, but the check fails
		if err := os.WriteFile(head, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "see docs/runbook.md#audit-head-damaged"},
	{"head truncated", func(t *testing.T, _, head string, _ []byte) {
		if err := os.Truncate(head, 0); err != nil {
			t.Fatal(err)
		}
	}, "see docs/runbook.md#audit-head-damaged"},
	// The last record cut to look like a torn write: it was synced and
	// named by the head, so it was no torn write.
	{"last record cut like a torn line", func(t *testing.T, log, _ string, _ []byte) {
		editLog(t, log, func(l []string) []string { l[len(l)-1] = l[len(l)-1][:40]; return l })
	}, "see docs/runbook.md#audit-head-mismatch"},
	// What a crash mid-write leaves: a torn line after the last record the
	// head names. Startup recovers it as before.
	{"torn line after the head", func(t *testing.T, log, _ string, _ []byte) {
		editLog(t, log, func(l []string) []string { return append(l, l[len(l)-1][:40]) })
	}, ""},
	// What a crash leaves: the head of an earlier commit. The log goes on
	// past it, and that is fine.
	{"head lags the log", func(t *testing.T, _, head string, early []byte) {
		if len(early) == 0 {
			t.Fatal("there was no head after two calls")
		}
		if err := os.WriteFile(head, early, 0o600); err != nil {
			t.Fatal(err)
		}
	}, ""},
}

func TestAuditHeadAtRestart(t *testing.T) {
	for _, c := range headCases {
		t.Run(c.name, func(t *testing.T) {
			h := start(t, nil)
			home := h.cfg.Paths.Home
			log, head := filepath.Join(home, "audit"), filepath.Join(home, "broker", "audit-head")
			var early []byte
			for i := range 5 {
				if _, ok := h.call(readReq(t, "head-1", uint64(i+1), "/data/none/"+string(rune('0'+i))+".md")).(wire.DeniedResponse); !ok {
					t.Fatal("the call was not denied")
				}
				if i == 1 {
					early, _ = os.ReadFile(head) // the lagging case checks it
				}
			}
			h.stop()
			c.tamper(t, log, head, early)

			var err error
			h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr})
			if c.want == "" {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				h.call(readReq(t, "head-1", 6, "/data/none/6.md"))
				h.stop()
				checkHead(t, log, head)
				return
			}
			if err == nil {
				t.Fatalf("brokerd started; want a refusal with %s", c.want)
			}
			if !strings.HasSuffix(err.Error(), "\n"+c.want) {
				t.Fatalf("start: %v; want %s", err, c.want)
			}
			t.Logf("refused: %v", err)
			restarted(t, h, log, head)
		})
	}
}

// restarted accepts the refused log with AcceptBreak and checks what that
// leaves: an AcceptedHead record that every verify reports, a head that
// names the end of the log, and a startup without AcceptBreak that works.
func restarted(t *testing.T, h *harness, log, head string) {
	t.Helper()
	before, _ := audit.VerifyDir(log)
	var err error
	h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr, AcceptBreak: true})
	if err != nil {
		t.Fatalf("start with AcceptBreak: %v", err)
	}
	if !strings.Contains(h.stderr.String(), "audit: accepted a log that does not hold its head: ") {
		t.Errorf("stderr %q", h.stderr.String())
	}
	h.stop()
	rep, err := audit.VerifyDir(log)
	// One record more: the AcceptedHead (and a Recovery before it for a
	// torn-looking line).
	if err != nil || rep.Failure != nil || len(rep.AcceptedHeads) != 1 || rep.Records != before.Records+1+uint64(len(rep.Recoveries)) {
		t.Fatalf("verify after the accepted head: %+v, %v (before: %d records)", rep, err, before.Records)
	}
	var last wire.AuditRecord
	editLog(t, log, func(l []string) []string {
		if err := wire.Unmarshal([]byte(strings.TrimSuffix(l[len(l)-1], "\n")), &last); err != nil {
			t.Fatal(err)
		}
		return l
	})
	if _, ok := last.Event.(wire.AcceptedHeadEvent); !ok {
		t.Fatalf("the last record is %#v", last.Event)
	}
	checkHead(t, log, head)
	if h.srv, err = Start(Options{Config: h.cfg, Runtime: h.rt, Stderr: h.stderr}); err != nil {
		t.Fatalf("the start after: %v", err)
	}
	h.stop()
}

// checkHead: the head names the log's last record.
func checkHead(t *testing.T, log, head string) {
	t.Helper()
	rep, err := audit.VerifyDir(log)
	if err != nil || rep.Failure != nil || rep.Head == nil {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	got, err := audit.ReadHead(head)
	if err != nil || got != (audit.Head{Next: rep.NextSeq, Hash: *rep.Head}) {
		t.Fatalf("head %+v, %v; the log's is next %d, %s", got, err, rep.NextSeq, rep.Head)
	}
}

// editLog rewrites the log's only file through edit, which gets and returns
// its lines, each with its newline.
func editLog(t *testing.T, log string, edit func([]string) []string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(log, "*.jsonl"))
	if len(names) != 1 {
		t.Fatalf("log files %v", names)
	}
	data, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines = edit(lines[:len(lines)-1])
	if err := os.WriteFile(names[0], []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rechainAll rewrites lines into a chain from seq 0, as a forger would.
func rechainAll(t *testing.T, lines []string) []string {
	t.Helper()
	var prev wire.Hash32
	for i, l := range lines {
		var rec wire.AuditRecord
		if err := wire.Unmarshal([]byte(strings.TrimSuffix(l, "\n")), &rec); err != nil {
			t.Fatal(err)
		}
		rec.Seq, rec.Prev = uint64(i), prev
		b, err := wire.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines[i], prev = string(b)+"\n", wire.Sha256(b)
	}
	return lines
}
