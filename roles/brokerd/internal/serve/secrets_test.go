package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// Grants naming a secret (issue 15); example.com is the host fetchReq asks.
const (
	grantFetchSecret = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n" +
		"secret = \"api-key\"\nsecret_header = \"Authorization\"\nsecret_format = \"Bearer {}\"\n[constraints]\nhosts = [\"example.com\"]\n"
	grantShellSecret = "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n" +
		"secret = \"deploy_key\"\nsecret_deliver = \"file\"\n"
	secretValue = "tok-5ecret-VALUE-81f2"
)

func shellReq(t testing.TB, session string, call uint64) wire.ToolRequest {
	return wire.ToolRequest{Session: sid(t, session), Call: wire.CallID(call), Tool: "shell", Arguments: `{"command":"deploy"}`}
}

// TestSecretUnavailable: a call under a grant whose secret cannot be read
// is denied secret_unavailable before anything runs or is asked; the
// Decision record names the grant; brokerd says which secret and why, once
// per cause, with the runbook line; check_grants reports it on the line of
// the secret key. Once the files are there the same calls run, and a file
// that turns unsafe, or goes while an approval waits, denies again.
func TestSecretUnavailable(t *testing.T) {
	h := start(t, map[string]string{"fetch-api.toml": grantFetchSecret, "shell-deploy.toml": grantShellSecret})
	dir := h.cfg.Paths.Secrets
	missingDir := "brokerd: the secrets directory " + dir + " does not exist; a call under a grant that names a secret is denied (secret_unavailable)\nsee docs/runbook.md#secret-unavailable\n"
	if !strings.Contains(h.stderr.String(), missingDir) {
		t.Errorf("stderr %q lacks %q", h.stderr.String(), missingDir)
	}
	denied := wire.DeniedResponse{Reason: wire.SecretUnavailable}
	for call := uint64(1); call <= 2; call++ {
		if got := h.call(fetchReq(t, "chat-1", call)); got != denied {
			t.Fatalf("fetch %d: %+v", call, got)
		}
	}
	// An ask grant: denied at once, no approval posted.
	if got := h.call(shellReq(t, "chat-1", 3)); got != denied {
		t.Fatalf("shell: %+v", got)
	}
	if l := h.admin(wire.Approvals{}).(wire.ApprovalList); len(l.Items) != 0 || h.rt.Count() != 0 {
		t.Fatalf("approvals %+v, runs %d", l.Items, h.rt.Count())
	}
	evs := h.events()
	for i, id := range []string{"fetch-api", "fetch-api", "shell-deploy"} {
		d, ok := evs[i].(wire.DecisionEvent)
		if !ok || d.Outcome != (wire.OutcomeDenied{Reason: wire.SecretUnavailable}) || d.Grant == nil || *d.Grant != id {
			t.Fatalf("record %d: %+v", i, evs[i])
		}
	}
	out := h.stderr.String()
	fetchLine := `brokerd: session chat-1 call 1: grant fetch-api needs secret "api-key", which cannot be read; the call is denied (secret_unavailable): ` +
		"the secrets directory " + dir + " does not exist\nsee docs/runbook.md#secret-unavailable\n"
	if strings.Count(out, fetchLine) != 1 || strings.Contains(out, "call 2: grant fetch-api") ||
		!strings.Contains(out, `call 3: grant shell-deploy needs secret "deploy_key"`) {
		t.Errorf("stderr %q; want once %q", out, fetchLine)
	}
	if got := checkReport(t, h); len(got) != 2 ||
		got[0] != `fetch-api.toml:5: secret: "api-key": the secrets directory `+dir+` does not exist; see docs/runbook.md#secret-unavailable` ||
		got[1] != `shell-deploy.toml:5: secret: "deploy_key": the secrets directory `+dir+` does not exist; see docs/runbook.md#secret-unavailable` {
		t.Errorf("check_grants %q", got)
	}

	// The files arrive: the same calls run (the shell once approved).
	h.secret("api-key", secretValue+"\n")
	h.secret("deploy_key", secretValue)
	if _, ok := h.call(fetchReq(t, "chat-1", 4)).(wire.ResultResponse); !ok {
		t.Fatal("the fetch did not run once its secret was there")
	}
	c, p := h.pending(shellReq(t, "chat-1", 5))
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: wire.OutcomeAsk{}}) {
		t.Fatalf("approve: %+v", got)
	}
	if _, ok := c.next(t).Msg.(wire.ResultResponse); !ok || h.rt.Count() != 2 {
		t.Fatalf("the shell did not run; runs %d", h.rt.Count())
	}
	if got := checkReport(t, h); len(got) != 0 {
		t.Errorf("check_grants with both secrets: %q", got)
	}

	// A file others may read is refused at the next call.
	if err := os.Chmod(filepath.Join(dir, "api-key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := h.call(fetchReq(t, "chat-1", 6)); got != denied {
		t.Fatalf("fetch with a 0644 file: %+v", got)
	}
	if out := h.stderr.String(); !strings.Contains(out, "call 6: grant fetch-api needs secret \"api-key\", which cannot be read; the call is denied (secret_unavailable): "+
		filepath.Join(dir, "api-key")+" has mode 0644: group and others must have no access (chmod 600)\nsee docs/runbook.md#secret-file-unsafe\n") {
		t.Errorf("stderr %q", out)
	}

	// Asked while the file was there, approved after it went: the
	// re-decision denies, and nothing runs.
	c, p = h.pending(shellReq(t, "chat-1", 7))
	if err := os.Remove(filepath.Join(dir, "deploy_key")); err != nil {
		t.Fatal(err)
	}
	if got := h.admin(wire.Approve{Approval: p.Approval}); got != (wire.ApproveResult{Outcome: wire.OutcomeDenied{Reason: wire.SecretUnavailable}}) {
		t.Fatalf("approve after the file went: %+v", got)
	}
	if got := c.next(t).Msg; got != denied || h.rt.Count() != 2 {
		t.Fatalf("got %+v, runs %d", got, h.rt.Count())
	}
	if out := h.stderr.String(); !strings.Contains(out, "call 7: grant shell-deploy needs secret \"deploy_key\", which cannot be read; the call is denied (secret_unavailable): there is no file "+
		filepath.Join(dir, "deploy_key")+"\nsee docs/runbook.md#secret-unavailable\n") {
		t.Errorf("stderr %q", out)
	}

	// The value is in no line brokerd printed and no audit record.
	h.stop()
	if strings.Contains(h.stderr.String(), secretValue) {
		t.Error("stderr shows the secret")
	}
	files, _ := filepath.Glob(filepath.Join(h.cfg.Paths.Home, "audit", "*"))
	if len(files) == 0 {
		t.Fatal("no audit files to scan")
	}
	for _, f := range files {
		if data, err := os.ReadFile(f); err != nil || strings.Contains(string(data), secretValue) {
			t.Errorf("%s: %v, or it holds the secret", f, err)
		}
	}
}

// checkReport is check_grants' answer as bxctl prints it.
func checkReport(t *testing.T, h *harness) []string {
	t.Helper()
	var got []string
	for _, p := range h.admin(wire.CheckGrants{}).(wire.GrantsReport).Problems {
		got = append(got, policy.FormatProblem(p))
	}
	return got
}
