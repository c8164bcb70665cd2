package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"boxmaker/wire"
)

// TestGrantReachingBoxmakerIsInvalid is issue 12's item 2 at brokerd: a
// shell grant over a directory holding BOXMAKER_HOME and the grants (the
// attack wrote a grant and its own session's taint file through it), and
// one reaching the session taint files through a symlink, each make the
// whole set invalid: a call another grant allows is denied grants_invalid,
// nothing runs, brokerd names the file, line and runbook entries, and
// check_grants on admin.sock reports the same problem.
func TestGrantReachingBoxmakerIsInvalid(t *testing.T) {
	h := start(t, map[string]string{"a.toml": grantAuto})
	link := filepath.Join(h.dir, "elsewhere")
	if err := os.Symlink(h.cfg.Paths.Home, link); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct{ path, want string }{
		{h.dir, `"` + h.dir + `" contains the grants directory (` + h.cfg.Paths.Grants + `)`},
		{link + "/broker/sessions", `leads through symlinks to ` + h.cfg.Paths.Home + `/broker/sessions, which lies inside BOXMAKER_HOME`},
	} {
		h.grant("zz.toml", "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\npaths = [\""+tc.path+"\"]\n")
		if got := h.call(readReq(t, "s-1", uint64(i), "/data/auto/x")); got != (wire.DeniedResponse{Reason: wire.GrantsInvalid}) {
			t.Fatalf("%s: got %+v", tc.path, got)
		}
		line := "zz.toml:5: constraints.paths: "
		if out := h.stderr.String(); !strings.Contains(out, "\n"+line) || !strings.Contains(out, tc.want) ||
			!strings.Contains(out, "; see docs/runbook.md#grant-protected-path\nsee docs/runbook.md#grants-invalid\n") {
			t.Fatalf("%s: stderr %q", tc.path, out)
		}
		rep, ok := h.admin(wire.CheckGrants{}).(wire.GrantsReport)
		if !ok || len(rep.Problems) != 1 || rep.Problems[0].File != "zz.toml" || *rep.Problems[0].Line != 5 ||
			!strings.Contains(rep.Problems[0].Problem, tc.want) {
			t.Fatalf("%s: check_grants %+v", tc.path, rep)
		}
	}
	if h.rt.Count() != 0 {
		t.Fatal("ran with a grant over boxmaker's own files")
	}
	os.Remove(filepath.Join(h.cfg.Paths.Grants, "zz.toml"))
	if _, ok := h.call(readReq(t, "s-1", 9, "/data/auto/x")).(wire.ResultResponse); !ok {
		t.Fatal("the valid set still denies")
	}
}
