package podman

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"boxmaker/roles/brokerd/internal/runner"
	"boxmaker/wire"
)

// TestHostRacerNeverMountsProtected (issue 29): a host process swaps a
// granted folder, as fast as it can, between the real one, a symlink to
// brokerd's home, and another folder renamed into its place, while calls
// under the grant start. Each call reads what the granted path named when
// it was checked (the real folder, or the one renamed there: a grant is a
// path, and either was at it, reached without a symlink) or is refused (by
// brokerd's check, or by the toolkit's when the swap fell between check
// and mount); none ever reads brokerd's file. The decision, which resolves
// the grant's path too, must not take a path swapped between its lstat and
// its readlink for an invalid grant set (a CI run on record did).
func TestHostRacerNeverMountsProtected(t *testing.T) {
	r := testRuntime(t, func(c *Config) { c.TimeoutMS = 20_000 })
	base := t.TempDir()
	home, d, other := filepath.Join(base, "home"), filepath.Join(base, "d"), filepath.Join(base, "other")
	for dir, body := range map[string]string{home: "BROKERD\n", d: "real\n", other: "moved\n"} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.Protect([]string{home})
	grants := grantDir(t, map[string]string{
		"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", d)),
		"read.toml":  grant("read_file", fmt.Sprintf("paths = [%q]", d)),
	})
	var stop atomic.Bool
	raced := make(chan int, 1)
	// Stopped however the test ends, before its folders are removed (the
	// cleanups run last first).
	t.Cleanup(func() {
		if !stop.Swap(true) {
			<-raced
		}
	})
	go func() {
		n := 0
		for ; !stop.Load(); n++ {
			os.Rename(d, d+".real")
			if n%2 == 0 {
				os.Symlink(home, d)
			} else {
				os.Rename(other, d)
			}
			time.Sleep(time.Duration(n%7) * time.Millisecond)
			if n%2 == 0 {
				os.Remove(d)
			} else {
				os.Rename(d, other)
			}
			os.Rename(d+".real", d)
			time.Sleep(time.Duration(n%5) * time.Millisecond)
		}
		raced <- n
	}()
	counts := map[string]int{}
	for i := range 16 {
		var res runner.Result
		if i%2 == 0 {
			res = call(t, r, grants, "shell", `{"command":"cat f","cwd":"`+d+`"}`)
		} else {
			res = call(t, r, grants, "read_file", `{"path":"`+d+`/f"}`)
		}
		s := fmt.Sprint(res.Response)
		switch resp := res.Response.(type) {
		case wire.ResultResponse:
			if resp.Content != "real\n" && resp.Content != "moved\n" {
				t.Fatalf("call %d read what it was not granted: %q", i, resp.Content)
			}
			counts["read "+strings.TrimSpace(resp.Content)]++
		case wire.FailedResponse:
			switch {
			case strings.Contains(s, "BROKERD"):
				t.Fatalf("call %d: %q", i, resp.Message)
			case strings.HasPrefix(resp.Message, "podman: refused to mount"):
				counts["refused by brokerd"]++
			case strings.HasPrefix(resp.Message, "toolkit: refused to run"):
				counts["refused by the toolkit"]++
			default:
				counts["failed otherwise"]++
			}
		}
	}
	stop.Store(true)
	t.Logf("outcomes: %v, %d swaps", counts, <-raced)
	if n := heldFds(t, base); n != 0 {
		t.Errorf("%d descriptors left open", n)
	}
}

// TestHardLinksReachNothing (issue 29): brokerd's own file, hard-linked
// into a granted folder by the host (a tool cannot: its mounts are other
// mounts, and link(2) across them fails), gives the tool nothing: read_file
// of the link is refused for its second name, and a shell in the folder
// cannot open it (brokerd's files are its user's alone, 0600).
func TestHardLinksReachNothing(t *testing.T) {
	r := testRuntime(t, nil)
	base := t.TempDir()
	home, x := filepath.Join(base, "home"), hostDir(t, false, nil)
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(home, "brokerd.toml")
	if err := os.WriteFile(conf, []byte("BROKERD\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(conf, filepath.Join(x, "link.toml")); err != nil {
		t.Skipf("hard link across the test's folders: %v", err)
	}
	r.Protect([]string{home, conf})
	grants := grantDir(t, map[string]string{
		"shell.toml": grant("shell", fmt.Sprintf("paths = [%q]", x)),
		"read.toml":  grant("read_file", fmt.Sprintf("paths = [%q, %q]", x, x+"/link.toml")),
	})
	for _, tc := range []struct{ tool, args, want string }{
		{"read_file", `{"path":"` + x + `/link.toml"}`, "hard links"},
		{"shell", `{"command":"cat link.toml; ln link.toml /tmp/l2; echo end","cwd":"` + x + `"}`, ""},
	} {
		res := call(t, r, grants, tc.tool, tc.args)
		if s := fmt.Sprint(res.Response); strings.Contains(s, "BROKERD") {
			t.Fatalf("%s: the tool read brokerd's file through a hard link: %s", tc.tool, s)
		}
		if tc.want != "" {
			if msg := failure(t, res); !strings.Contains(msg, tc.want) {
				t.Errorf("%s: %q", tc.tool, msg)
			}
		}
	}
}
