package podman

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

// TestProcGrantReadsNoOtherCall (issue 29): while one call's command
// keeps a file in its own container, a second call under a shell grant on
// /proc looks for it through /proc/<pid>/root. The grant is refused
// before any container is made, so the second call never sees the first.
func TestProcGrantReadsNoOtherCall(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TimeoutMS = 20_000 })
	x := hostDir(t, true, nil)
	first := grantDir(t, map[string]string{"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", x))})
	proc := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["/proc"]`)})
	done := make(chan runner.Result, 1)
	go func() {
		done <- callNoFatal(r, first, "shell", `{"command":"echo OTHERCALL >/tmp/mine && touch started && sleep 6; echo slept","cwd":"`+x+`"}`)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for !exists(x+"/started") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	look := `for p in /proc/[0-9]*; do cat $p/root/tmp/mine 2>/dev/null && echo via $p; done; echo looked`
	res := call(t, r, proc, "shell", `{"command":"`+look+`","cwd":"/proc"}`)
	if s := fmt.Sprint(res.Response); strings.Contains(s, "OTHERCALL") {
		t.Errorf("the /proc grant read another call's file: %s", s)
	}
	if msg := failure(t, res); !strings.Contains(msg, "refused to mount /proc: it is on a kernel filesystem (proc)") {
		t.Errorf("%q", msg)
	}
	if got, ok := (<-done).Response.(wire.ResultResponse); !ok || got.Content != "slept\n" {
		t.Errorf("the first call: %#v", got)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
