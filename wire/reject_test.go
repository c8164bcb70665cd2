package wire

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rejectDir = "../fixtures/wire/reject"

// rejectResult decodes a reject fixture as its name says (env-, audit-,
// log-, turn-, grant-) and describes the error: the DecodeError kind, or
// bad_version, or for grants "line N: field: problem".
func rejectResult(name string, data []byte) string {
	var err error
	switch {
	case strings.HasPrefix(name, "env-"):
		_, err = UnmarshalEnvelope(data)
	case strings.HasPrefix(name, "audit-"):
		var r AuditRecord
		err = Unmarshal(data, &r)
	case strings.HasPrefix(name, "log-"):
		var r LogRecord
		err = Unmarshal(data, &r)
	case strings.HasPrefix(name, "turn-"):
		var r TurnEvent
		err = Unmarshal(data, &r)
	case strings.HasPrefix(name, "grant-"):
		_, err = DecodeGrant(data)
		var ge *GrantError
		if errors.As(err, &ge) {
			return ge.Error()
		}
	default:
		return "unknown fixture prefix"
	}
	var ve *VersionError
	var de *DecodeError
	switch {
	case err == nil:
		return "accepted"
	case errors.As(err, &ve):
		return "bad_version"
	case errors.As(err, &de):
		return de.Kind.String()
	}
	return fmt.Sprintf("untyped error %T: %v", err, err)
}

// TestRejectFixtures decodes every file in fixtures/wire/reject and checks
// the error against expect.tsv ("file<TAB>expected"; for JSON the error kind,
// for grants a prefix of the problem text with its line).
func TestRejectFixtures(t *testing.T) {
	f, err := os.Open(filepath.Join(rejectDir, "expect.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	expect := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, want, ok := strings.Cut(sc.Text(), "\t")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		expect[name] = want
	}
	entries, err := os.ReadDir(rejectDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "expect.tsv" {
			continue
		}
		want, ok := expect[e.Name()]
		if !ok {
			t.Errorf("%s has no line in expect.tsv", e.Name())
			continue
		}
		delete(expect, e.Name())
		data, err := os.ReadFile(filepath.Join(rejectDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got := rejectResult(e.Name(), data)
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, want %q", e.Name(), got, want)
		}
	}
	for name := range expect {
		t.Errorf("expect.tsv names %s, which does not exist", name)
	}
}
