package podman

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/domain/entities/types"

	"boxmaker/roles/brokerd/internal/runner"
)

// waiting lists this runtime's containers once nothing runs in the
// background: after a call, the one made ahead for the next.
func waiting(t *testing.T, r *Runtime) []types.ListContainer {
	t.Helper()
	r.WaitQuiet()
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	list, err := containers.List(conn, new(containers.ListOptions).WithAll(true).
		WithFilters(map[string][]string{"label": {labelScope + "=" + r.scope}}))
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// oneWaiting is the one container made ahead: initialised (`runc create`)
// but never started, with no call's label.
func oneWaiting(t *testing.T, r *Runtime, tool string) types.ListContainer {
	t.Helper()
	list := waiting(t, r)
	if len(list) != 1 {
		t.Fatalf("%d containers wait, want 1: %+v", len(list), list)
	}
	c := list[0]
	if c.State != "initialized" || c.Labels[labelCall] != "" || c.Labels[labelTool] != tool {
		t.Fatalf("the container made ahead: state %q, labels %v", c.State, c.Labels)
	}
	return c
}

// TestNextCallStartsTheContainerMadeAhead: after a call, one container
// like it waits, created and initialised but never started; the next call
// like it runs in that one (its cgroup names it), sees nothing of the call
// before, and leaves another waiting; Close removes it.
func TestNextCallStartsTheContainerMadeAhead(t *testing.T) {
	r := testRuntime(t, nil)
	dir := hostDir(t, false, map[string]string{"a.md": "hello\n"})
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["`+dir+`"]`)})
	first := `{"command":"echo mark > /var/tmp/mark; ls /var/tmp","cwd":"` + dir + `"}`
	if got := content(t, call(t, r, grants, "shell", first)); got != "mark\n" {
		t.Fatalf("first call: %q", got)
	}
	made := oneWaiting(t, r, "shell")
	// cgroupfs names the container's cgroup by its id.
	second := `{"command":"ls -a /var/tmp; cat /proc/self/cgroup; cat a.md","cwd":"` + dir + `"}`
	got := content(t, call(t, r, grants, "shell", second))
	if !strings.HasPrefix(got, ".\n..\n") || strings.Contains(got, "mark") {
		t.Errorf("the second call sees the first's /var/tmp: %q", got)
	}
	if !strings.Contains(got, made.ID) || !strings.HasSuffix(got, "hello\n") {
		t.Errorf("the second call did not run in %s: %q", short(made.ID), got)
	}
	if next := oneWaiting(t, r, "shell"); next.ID == made.ID {
		t.Errorf("the container made ahead waits still after its call")
	}
	// Its time up (aheadMaxAge), the one waiting is removed.
	r.ahead.mu.Lock()
	var all []*ahead
	for _, a := range r.ahead.byKey {
		all = append(all, a)
	}
	r.ahead.mu.Unlock()
	for _, a := range all {
		r.expireAhead(a)
	}
	if list := waiting(t, r); len(list) != 0 {
		t.Errorf("after its time: %+v", list)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Errorf("after Close: %v", left)
	}
}

// TestContainerMadeAheadServesOnlyItsObjects: once the granted folder is
// another object (renamed away, a new one in its place), the container
// made for the old one is removed, not used, and the call runs in a fresh
// one that mounts the new folder. So is one older than aheadMaxAge, and
// one for another tool or other mounts.
func TestContainerMadeAheadServesOnlyItsObjects(t *testing.T) {
	r := testRuntime(t, nil)
	dir := hostDir(t, false, map[string]string{"old.txt": "old\n"})
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["`+dir+`"]`)})
	ls := `{"command":"ls; cat /proc/self/cgroup","cwd":"` + dir + `"}`
	if got := content(t, call(t, r, grants, "shell", ls)); !strings.HasPrefix(got, "old.txt\n") {
		t.Fatalf("first call: %q", got)
	}
	made := oneWaiting(t, r, "shell")
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := content(t, call(t, r, grants, "shell", ls))
	if !strings.HasPrefix(got, "new.txt\n") || strings.Contains(got, made.ID) {
		t.Errorf("after the folder was replaced: %q (made ahead: %s)", got, short(made.ID))
	}
	stale := oneWaiting(t, r, "shell")
	if stale.ID == made.ID {
		t.Fatalf("the container made for the old folder still waits")
	}

	// Too old.
	r.ahead.mu.Lock()
	for _, a := range r.ahead.byKey {
		a.made = time.Now().Add(-aheadMaxAge - time.Second)
	}
	r.ahead.mu.Unlock()
	if got := content(t, call(t, r, grants, "shell", ls)); strings.Contains(got, stale.ID) {
		t.Errorf("a call ran in a container made %s before it: %q", aheadMaxAge, got)
	}
	fresh := oneWaiting(t, r, "shell")

	// Another folder: the container made for this one waits on.
	other := hostDir(t, false, nil)
	otherGrants := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["`+other+`"]`)})
	if got := content(t, call(t, r, otherGrants, "shell", `{"command":"cat /proc/self/cgroup","cwd":"`+other+`"}`)); strings.Contains(got, fresh.ID) {
		t.Errorf("a call under another folder ran in its container: %q", got)
	}
	if list := waiting(t, r); len(list) != 2 {
		t.Errorf("%d containers wait, want one for each folder", len(list))
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Errorf("after Close: %v", left)
	}
}

// TestWhichCallsHaveAContainerMadeAhead: only a call's tool and mounts
// make its key, and a call with egress or a secret, or under userns
// "auto", never has one.
func TestWhichCallsHaveAContainerMadeAhead(t *testing.T) {
	r := &Runtime{}
	mounts := []runner.Mount{{Path: "/data/a"}, {Path: "/data/b", Writable: true}}
	base := container{name: "x", call: "s/1", tool: "shell", mounts: mounts}
	key, ok := r.aheadKey(base)
	if !ok {
		t.Fatal("a plain shell call has no key")
	}
	other := base
	other.name, other.call = "y", "s/2"
	if k, ok := r.aheadKey(other); !ok || k != key {
		t.Errorf("the name and the call changed the key")
	}
	for name, edit := range map[string]func(*container){
		"tool":     func(c *container) { c.tool = "read_file" },
		"writable": func(c *container) { c.mounts = []runner.Mount{mounts[0], {Path: "/data/b"}} },
		"order":    func(c *container) { c.mounts = []runner.Mount{mounts[1], mounts[0]} },
		"fewer":    func(c *container) { c.mounts = mounts[:1] },
		// A path that would run into the next one if joined carelessly.
		"joined": func(c *container) { c.mounts = []runner.Mount{{Path: `/data/a" false "/data/b`, Writable: true}} },
	} {
		c := base
		edit(&c)
		if k, ok := r.aheadKey(c); !ok || k == key {
			t.Errorf("%s: same key (ok %v)", name, ok)
		}
	}
	for name, edit := range map[string]func(*container){
		"egress":      func(c *container) { c.egress = "/run/p/egress.sock" },
		"ca":          func(c *container) { c.ca = "/run/p/ca.pem" },
		"secret file": func(c *container) { c.secretFile = true },
	} {
		c := base
		edit(&c)
		if _, ok := r.aheadKey(c); ok {
			t.Errorf("%s: made ahead", name)
		}
	}
	auto := &Runtime{cfg: Config{UserNS: "auto"}}
	if _, ok := auto.aheadKey(base); ok {
		t.Error(`userns "auto": made ahead`)
	}
	off := &Runtime{}
	off.MakeAhead(false)
	if _, ok := off.aheadKey(base); ok {
		t.Error("turned off: made ahead")
	}
}

// TestCallOutlivesItsContainerMadeAheadGone: when the container made ahead
// was removed behind brokerd's back, the attach fails before anything
// started, and the call runs in a fresh container.
func TestCallOutlivesItsContainerMadeAheadGone(t *testing.T) {
	r := testRuntime(t, nil)
	dir := hostDir(t, false, map[string]string{"a.md": "hello\n"})
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["`+dir+`"]`)})
	cat := `{"command":"cat a.md","cwd":"` + dir + `"}`
	if got := content(t, call(t, r, grants, "shell", cat)); got != "hello\n" {
		t.Fatalf("first call: %q", got)
	}
	made := oneWaiting(t, r, "shell")
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := remove(conn, made.ID); err != nil {
		t.Fatal(err)
	}
	if got := content(t, call(t, r, grants, "shell", cat)); got != "hello\n" {
		t.Errorf("second call: %q", got)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Errorf("after Close: %v", left)
	}
}

// TestAbandonedContainerIsRemoved: a container given up while it is still
// being made (its call's context ended, or it waited past aheadWait) is
// removed by its maker once made, and Close waits for that removal.
func TestAbandonedContainerIsRemoved(t *testing.T) {
	r := testRuntime(t, nil)
	dir := hostDir(t, false, nil)
	grants := grantDir(t, map[string]string{"shell.toml": grant("shell", `paths = ["`+dir+`"]`)})
	content(t, call(t, r, grants, "shell", `{"command":"true","cwd":"`+dir+`"}`))
	// Straight after the call, its successor is usually still being made.
	r.ahead.mu.Lock()
	var a *ahead
	for _, e := range r.ahead.byKey {
		a = e
	}
	r.ahead.mu.Unlock()
	if a == nil {
		t.Fatal("no container is being made ahead after the call")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if id := r.takeAhead(ctx, a.key, a.ids); id != "" {
		t.Fatalf("a cancelled call took %s", short(id))
	}
	if list := waiting(t, r); len(list) != 0 {
		t.Errorf("after it was given up: %+v", list)
	}
	if left := leftovers(t, r); len(left) != 0 {
		t.Errorf("after Close: %v", left)
	}
}
