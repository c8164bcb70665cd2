package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"boxmaker/internal/syncbuf"
)

// prepareOwnerFolders makes the owner's home with two folders, each
// holding one file: scratch, under an auto grant for shell, and notes,
// under an ask grant for read_file. Neither the tools' uid nor brokerd
// can reach them until bxctl grants check --fix has run.
func (w *world) prepareOwnerFolders() (scratch, notes string) {
	t := w.t
	home := "/home/" + treeOwner
	scratch, notes = home+"/scratch", home+"/notes"
	uid, gid := int(w.users[treeOwner]), int(w.groups[treeOwner])
	// 0700, as Debian 12 makes a home and its owner's folders: bxctl
	// grants check --fix gives the tools and brokerd what they need.
	for _, d := range []string{home, scratch, notes} {
		if err := os.Mkdir(filepath.Join(w.root, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(w.root, d), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{scratch + "/hello.txt": "hello from the owner's folder\n", notes + "/today.md": "the owner's notes for today\n"} {
		if err := os.WriteFile(filepath.Join(w.root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.grant("scratch-shell", fmt.Sprintf("tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"private\"\n\n[constraints]\npaths = [%q]\n", scratch))
	w.grant("notes-read", fmt.Sprintf("tool = \"read_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"private\"\n\n[constraints]\npaths = [%q]\n", notes))
	return scratch, notes
}

// grant writes the grant file id.toml as an owner would: root's, group
// brokerd's, 0640.
func (w *world) grant(id, text string) {
	path := filepath.Join(w.root, w.plan.Etc, "grants", id+".toml")
	if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chown(path, 0, int(w.groups[w.plan.UserFor("brokerd")])); err != nil {
		w.t.Fatal(err)
	}
}

// approvedCall is a turn whose read_file waits for the owner: bxctl chat
// --say lists the approval and waits; the owner finds it with bxctl
// approvals and approves it with bxctl approve; the call then runs in a
// tool container and the turn ends with the file's text. It returns the
// turn's output.
func (w *world) approvedCall() string {
	t := w.t
	bxctl := filepath.Join(w.plan.Bin, "bxctl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var turn syncbuf.Buffer
	cmd := w.c.command(ctx, "runuser", "-u", treeOwner, "--", bxctl, "chat", "--say", "what do my notes say?")
	cmd.Stdout, cmd.Stderr = &turn, &turn
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	w.waitFor("the read_file call to wait for approval", func() (bool, string) {
		list := w.owner(bxctl, "approvals")
		first, _, _ := strings.Cut(list, "\n")
		if n, _, ok := strings.Cut(first, "  "); ok && strings.Contains(list, "read_file {") {
			id = n
			return true, list
		}
		return false, list + turn.String()
	})
	approve := w.owner(bxctl, "approve", id)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the approved turn: %v\n%s", err, turn.String())
	}
	out := turn.String()
	if !strings.Contains(out, "the owner's notes for today") {
		t.Errorf("the approved turn (bxctl approve %s said %q):\n%s\n%s", id, approve, out, w.c.journal(w.unit("brokerd")))
	}
	return out
}
