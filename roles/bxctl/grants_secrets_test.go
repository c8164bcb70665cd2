package bxctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Grants naming secrets (issue 15), valid by the loading rules.
const (
	grantFetchKey = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n" +
		"secret = \"api-key\"\nsecret_header = \"Authorization\"\n[constraints]\nhosts = [\"api.example.com\"]\n"
	grantShellKey = "tool = \"shell\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n" +
		"secret = \"deploy_key\"\nsecret_deliver = \"file\"\n"
	secretValue = "tok-VALUE-0b7e"
)

// secretsCheck runs `grants check --grants grants --secrets secrets` (no
// --secrets when secrets is "").
func secretsCheck(t *testing.T, grants, secrets string) (int, string, string) {
	t.Helper()
	args := []string{"grants", "check", "--grants", grants, "--home", t.TempDir()}
	if secrets != "" {
		args = append(args, "--secrets", secrets)
	}
	var out, errs bytes.Buffer
	code := Main("bxctl", args, strings.NewReader(""), &out, &errs)
	return code, out.String(), errs.String()
}

func writeFiles(t *testing.T, dir string, mode os.FileMode, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGrantsCheckSecrets: offline with --secrets, a secret that is missing
// or unsafe is a problem on its grant's secret line with its own runbook
// line (the grants are valid, so no grants-invalid line); with the files
// in place the check passes; without --secrets only the names are checked.
func TestGrantsCheckSecrets(t *testing.T) {
	root := t.TempDir()
	grants, secrets := filepath.Join(root, "grants"), filepath.Join(root, "secrets")
	writeFiles(t, grants, 0o600, map[string]string{"fetch-api.toml": grantFetchKey, "shell-deploy.toml": grantShellKey})
	writeFiles(t, secrets, 0o644, map[string]string{"api-key": secretValue})
	if err := os.Chmod(filepath.Join(secrets, "api-key"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := secretsCheck(t, grants, secrets)
	want := `fetch-api.toml:5: secret: "api-key": ` + filepath.Join(secrets, "api-key") + ` has mode 0644: group and others must have no access (chmod 600); see docs/runbook.md#secret-file-unsafe` + "\n" +
		`shell-deploy.toml:5: secret: "deploy_key": there is no file ` + filepath.Join(secrets, "deploy_key") + `; see docs/runbook.md#secret-unavailable` + "\n"
	if code != 1 || out != want || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errs, want)
	}
	if strings.Contains(out+errs, secretValue) {
		t.Error("the check printed a secret")
	}

	if err := os.Chmod(filepath.Join(secrets, "api-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, secrets, 0o600, map[string]string{"deploy_key": secretValue + "\n"})
	if code, out, errs := secretsCheck(t, grants, secrets); code != 0 || out != "grants: ok\n" || errs != "" {
		t.Errorf("with both files: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	// Without --secrets the files are not looked at; a loading problem
	// next to a secret problem brings the grants-invalid line back.
	empty := filepath.Join(root, "empty")
	writeFiles(t, empty, 0o600, nil)
	if code, out, _ := secretsCheck(t, grants, ""); code != 0 || out != "grants: ok\n" {
		t.Errorf("without --secrets: exit %d, stdout %q", code, out)
	}
	writeFiles(t, grants, 0o600, map[string]string{"bad.toml": strings.Replace(grantShellKey, "deploy_key", "Deploy", 1)})
	code, out, _ = secretsCheck(t, grants, empty)
	if code != 1 || !strings.HasPrefix(out, "bad.toml:5: secret: \"Deploy\" is not a valid secret name") ||
		!strings.Contains(out, "fetch-api.toml:5: secret: \"api-key\": there is no file ") ||
		!strings.HasSuffix(out, "; see docs/runbook.md#secret-unavailable\nsee docs/runbook.md#grants-invalid\n") {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

// TestGrantsCheckSecretsDirUnsafe: a secrets directory others can read is
// refused as brokerd's start refuses it, before any grant is checked.
func TestGrantsCheckSecretsDirUnsafe(t *testing.T) {
	root := t.TempDir()
	grants, secrets := filepath.Join(root, "grants"), filepath.Join(root, "secrets")
	writeFiles(t, grants, 0o600, map[string]string{"fetch-api.toml": grantFetchKey})
	writeFiles(t, secrets, 0o600, map[string]string{"api-key": secretValue})
	if err := os.Chmod(secrets, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := secretsCheck(t, grants, secrets)
	want := "bxctl grants check: the secrets directory " + secrets + " has mode 0755: group and others must have no access (chmod 700)\n" +
		"see docs/runbook.md#secrets-dir-unsafe\n"
	if code != 1 || out != "" || errs != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errs, want)
	}
	// --secrets asks for the offline check: without --grants it is a
	// mistake, not silently ignored.
	var o, e bytes.Buffer
	if code := Main("bxctl", []string{"grants", "check", "--secrets", secrets}, strings.NewReader(""), &o, &e); code != 2 ||
		!strings.Contains(e.String(), "--secrets goes with --grants") {
		t.Errorf("--secrets alone: exit %d, stderr %q", code, e.String())
	}
}

// TestGrantsCheckProtectsTheSecretsDirectory: a grant whose path reaches
// the --secrets directory is refused offline, as brokerd refuses it (its
// [paths] secrets is protected wherever it is, e.g. systemd's
// /run/credentials/<unit>); without --secrets the same grant is fine.
func TestGrantsCheckProtectsTheSecretsDirectory(t *testing.T) {
	root := t.TempDir()
	grants, run := filepath.Join(root, "grants"), filepath.Join(root, "run")
	secrets := filepath.Join(run, "creds")
	writeFiles(t, grants, 0o600, map[string]string{"read-run.toml": "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\"" + run + "\"]\n"})
	writeFiles(t, secrets, 0o600, nil)
	if code, out, errs := secretsCheck(t, grants, ""); code != 0 || out != "grants: ok\n" {
		t.Fatalf("without --secrets: %d %q %q", code, out, errs)
	}
	code, out, _ := secretsCheck(t, grants, secrets)
	if code != 1 || !strings.HasPrefix(out, "read-run.toml:") || !strings.Contains(out, secrets) || !strings.Contains(out, "see docs/runbook.md#grants-invalid") {
		t.Fatalf("with --secrets: %d %q", code, out)
	}
}
