package podman

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"boxmaker/wire"
)

// TestRunReturnsOnlyOnceNothingOfTheCallRuns (issue 12, item 2; issue 26):
// brokerd writes the session state after Run returns, so nothing the call
// started may still run then. Each command leaves a process that, were it
// still alive, would write a file in its granted folder a moment later;
// none appears after Run has returned, not after an answer, not after a
// process left holding the output, and not after a call stopped at its
// time limit. The containers themselves may be removed after the call
// (removeLater): once Close has waited for that, none is left.
func TestRunReturnsOnlyOnceNothingOfTheCallRuns(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TimeoutMS = 2000 })
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := hostDir(t, true, nil)
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["`+dir+`"]`)})
	late := filepath.Join(dir, "late")
	for _, tc := range []struct{ name, command string }{
		{"an answer", "(sleep 0.5; echo late > late) >/dev/null 2>&1 & echo hi"},
		{"another answer", "(sleep 0.5; echo late > late) >/dev/null 2>&1 & echo hi"},
		{"a process left holding the output", "(sleep 0.5; echo late > late) & echo hi"},
		{"a process left in its own session", "setsid sh -c 'sleep 0.5; echo late > late' >/dev/null 2>&1 & echo hi"},
		{"the time limit", "(sleep 2.5; echo late > late) & sleep 30"},
	} {
		args, _ := wire.Marshal(struct {
			Command string `json:"command"`
			Cwd     string `json:"cwd"`
		}{tc.command, dir})
		resp := call(t, r, grants, "shell", string(args)).Response
		if _, failed := resp.(wire.FailedResponse); failed != (tc.name == "the time limit") {
			t.Errorf("%s: %#v", tc.name, resp)
		}
		time.Sleep(time.Second)
		if tc.name == "the time limit" {
			time.Sleep(2 * time.Second)
		}
		if _, err := os.Lstat(late); err == nil {
			t.Errorf("%s: a process of the call still ran after Run returned, and wrote %s", tc.name, late)
			os.Remove(late)
		}
	}
	r.Close()
	ids, err := labelled(conn, r.scope)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 0 {
		t.Errorf("after Close, containers are still there: %v", ids)
	}
}
