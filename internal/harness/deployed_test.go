package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"boxmaker/deploy"
	"boxmaker/deploy/deploytest"
	"boxmaker/internal/fakemm"
	"boxmaker/internal/harness"
	"boxmaker/internal/syncbuf"
)

// TestDeployed is issue 13's proof that containment is real: deploy apply
// with a name prefix of its own, every role started as its own user, then
// (1) the access matrix: every role user and the owner tries to connect to
// every socket and to read and write every state path, and each outcome is
// the plan's; (2) a whole chat as the owner's user, with an ask approved by
// bxctl approve, a shell call in a real container and a denied call, then
// bxctl audit verify as the owner; the file the tool wrote belongs on the
// host to a uid that is neither root nor any role's.
func TestDeployed(t *testing.T) {
	bin := build(t)
	root := deploytest.Root(t, filepath.Join(bin, "boxmaker"))
	plan := deploy.New(deploytest.Params(t, root))
	owner := plan.Prefix + "alice"
	t.Cleanup(func() { deploytest.RemoveAccounts(t, plan, owner) })
	if out, err := exec.Command("useradd", "--no-create-home", owner).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	if err := deploy.Apply(plan, deploy.ApplyOptions{Owners: []string{owner}}); err != nil {
		t.Fatal(err)
	}
	// The owner's secret-like files exist, so that reading them means
	// something: the token deploy never writes.
	if err := os.WriteFile(filepath.Join(plan.Etc, "gatewayd.token"), []byte("not-a-real-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// gatewayd too, against the stand-in Mattermost, so that every role
	// runs and every socket listens.
	mm, err := fakemm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mm.Close)
	bot, kyle := mm.AddUser("boxmaker", true), mm.AddUser("kyle", false)
	log := &syncbuf.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h, err := harness.Start(ctx, harness.Options{Bin: bin, Home: root, Log: log, TTLMs: 120000,
		Mattermost: &harness.Mattermost{URL: mm.URL(), Token: bot.Token, Owners: []string{kyle.ID}},
		Deployed:   &harness.Deployed{Plan: plan, Owner: owner}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
		if t.Failed() {
			t.Logf("the harness's output:\n%s", log.String())
		}
	})
	t.Run("access matrix", func(t *testing.T) { accessMatrix(t, root, plan, owner) })
	t.Run("chat as the owner", func(t *testing.T) { deployedChat(t, h, plan) })
	// Issue 29: each role's user against the others, once every role has
	// run a chat and made its files (deployedattack_test.go).
	t.Run("proc of other roles", func(t *testing.T) { procOfOtherRoles(t, root, plan, owner, []string{bot.Token}) })
	t.Run("no unguarded listener", func(t *testing.T) { noUnguardedListener(t, plan) })
	t.Run("runtime files", func(t *testing.T) { runtimeFiles(t, root, plan, owner) })
}

// A cell as the probe sees it.
type probeCell struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Got  string `json:"got"`
}

func accessMatrix(t *testing.T, root string, plan deploy.Plan, owner string) {
	// The probe is this test binary, run as each subject; it must be where
	// every user can run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(root, "bin", "probe")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	peers := map[string]deploy.Socket{}
	for _, s := range plan.Sockets {
		peers[s.Path] = s
	}
	cells := 0
	for _, subject := range deploy.Subjects {
		name := owner
		if subject != "owner" {
			name = plan.UserFor(subject)
		}
		var ask []probeCell
		for _, a := range plan.Access {
			if a.Subject == subject {
				ask = append(ask, probeCell{Op: a.Op, Path: a.Path})
			}
		}
		got := runProbe(t, probe, name, ask)
		for _, c := range got {
			want := "refused"
			if plan.Allowed(subject, c.Op, c.Path) {
				want = "allowed"
				if s, ok := peers[c.Path]; ok {
					want = servedOrClosed(s, subject)
				}
			}
			if c.Got != want {
				t.Errorf("%s (%s) %s %s: %s, the plan says %s", subject, name, c.Op, c.Path, c.Got, want)
			}
			cells++
		}
	}
	if cells != len(plan.Access) {
		t.Fatalf("%d cells probed, the plan has %d", cells, len(plan.Access))
	}
	t.Logf("%d cells, every one as the plan says", cells)
}

// servedOrClosed is what a connection the file modes let through should
// meet: a listener that checks its peer (SO_PEERCRED, [peers]) serves only
// the plan's peer and closes on anyone else. A socket with no peer rule
// (Podman's) serves whoever its modes let in.
func servedOrClosed(s deploy.Socket, subject string) string {
	if s.PeerUser == "" && s.PeerGroup == "" || subject == s.Client {
		return "served"
	}
	return "closed"
}

func runProbe(t *testing.T, probe, name string, cells []probeCell) []probeCell {
	t.Helper()
	cred, err := harness.Credential(name)
	if err != nil {
		t.Fatal(err)
	}
	ask, _ := json.Marshal(cells)
	cmd := exec.Command(probe, "-test.run=^$")
	cmd.Env = []string{"BOXMAKER_PROBE=" + string(ask)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe as %s: %v", name, err)
	}
	var got []probeCell
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cells) {
		t.Fatalf("probe as %s answered %d cells of %d (%v): %s", name, len(got), len(cells), err, out)
	}
	return got
}

// probeMain runs in the child: each cell tried for real, as this user.
func probeMain(ask string) int {
	var cells []probeCell
	if err := json.Unmarshal([]byte(ask), &cells); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i, c := range cells {
		cells[i].Got = try(c.Op, c.Path)
	}
	out, _ := json.Marshal(cells)
	os.Stdout.Write(out)
	return 0
}

func try(op, path string) string {
	verdict := func(err error) string {
		if err != nil {
			return "refused"
		}
		return "allowed"
	}
	switch op {
	case "connect":
		c, err := net.DialTimeout("unix", path, 2*time.Second)
		if err != nil {
			return "refused"
		}
		defer c.Close()
		// A listener that refuses the peer closes at once, before reading;
		// one that serves waits for a request (or greets).
		c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return "closed"
		}
		return "served"
	case "read":
		fi, err := os.Stat(path)
		if err != nil {
			return "refused"
		}
		if fi.IsDir() {
			_, err = os.ReadDir(path)
			return verdict(err)
		}
		f, err := os.Open(path)
		if err == nil {
			f.Close()
		}
		return verdict(err)
	case "write":
		fi, err := os.Stat(path)
		if err != nil {
			return "refused"
		}
		if fi.IsDir() {
			p := filepath.Join(path, ".bxprobe-"+strconv.Itoa(os.Getpid()))
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				f.Close()
				os.Remove(p)
			}
			return verdict(err)
		}
		// Opened for writing, never written: the probe changes nothing.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return verdict(err)
	}
	return "unknown op " + op
}

func deployedChat(t *testing.T, h *harness.Harness, plan deploy.Plan) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "What do my notes say?") }()
	id := pendingApproval(t, h)
	var a syncbuf.Buffer
	if err := h.Bxctl(ctx, nil, &a, &a, "approve", id); err != nil || !strings.Contains(a.String(), "approved "+id+": runs") {
		t.Fatalf("approve as the owner: %v\n%s", err, a.String())
	}
	if err := <-done; err != nil || !strings.Contains(out.String(), "> - Water the plants.") {
		t.Fatalf("chat: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "run: echo hi > made-by-tool && id -u"); err != nil {
		t.Fatalf("shell: %v\n%s", err, out.String())
	}
	fi, err := os.Stat(filepath.Join(h.Scratch(), "made-by-tool"))
	if err != nil {
		t.Fatalf("the tool wrote nothing: %v\n%s", err, out.String())
	}
	hostUID := fi.Sys().(*syscall.Stat_t).Uid
	if hostUID == 0 {
		t.Fatalf("the tool's file is root's on the host")
	}
	for _, u := range plan.Users {
		if pu, err := user.Lookup(u.Name); err == nil && pu.Uid == strconv.Itoa(int(hostUID)) {
			t.Fatalf("the tool ran on the host as %s", u.Name)
		}
	}
	t.Logf("the tool process's host uid: %d", hostUID)
	out.Reset()
	if err := h.Bxctl(ctx, nil, &out, &out, "chat", "--say", "Fetch a web page for me."); err != nil ||
		!strings.Contains(out.String(), "> Denied: no grant allows this call.") {
		t.Fatalf("http_fetch: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := h.Bxctl(ctx, nil, &out, &out, "audit", "verify"); err != nil || !strings.Contains(out.String(), "audit: ok, ") {
		t.Fatalf("audit verify as the owner: %v\n%s", err, out.String())
	}
	if got := kinds(events(t, h)); got != "decision:ask approval:approved result:result decision:allowed result:result decision:no_grant" {
		t.Fatalf("audit events: %s", got)
	}
}
