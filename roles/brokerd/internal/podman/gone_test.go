package podman

import (
	"context"
	"testing"

	"boxmaker/wire"
)

// TestRunReturnsOnlyOnceTheContainerIsGone (issue 12, item 2): brokerd
// writes the session state after Run returns, so nothing the call started
// may still run then. Right after each Run, with no Close to wait on,
// none of this test's containers exists any more: not after an answer,
// not after a command that left a process holding its output, and not
// after one stopped at its time limit.
func TestRunReturnsOnlyOnceTheContainerIsGone(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TimeoutMS = 2000 })
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, command string }{
		{"an answer", "echo hi"},
		{"another answer", "echo hi"},
		{"a process left holding the output", "sleep 30 & echo hi"},
		{"a process left in the background", "sleep 30 >/dev/null 2>&1 & echo hi"},
		{"the time limit", "sleep 30"},
	} {
		resp, _ := shellCall(t, r, tc.command)
		ids, err := labelled(conn, r.scope)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 0 {
			t.Errorf("%s: Run returned (%T) with its container still there: %v", tc.name, resp, ids)
		}
		if _, failed := resp.(wire.FailedResponse); failed != (tc.name == "the time limit") {
			t.Errorf("%s: %#v", tc.name, resp)
		}
	}
}
