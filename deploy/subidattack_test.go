package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"boxmaker/deploy"
	"boxmaker/deploy/deploytest"
)

// Issue 29, class 3: the tools user (rootless Podman) can run a process as
// any host id of its subordinate ranges (newuidmap, newgidmap). A range
// that holds an id someone already has hands the tools user, and every
// container, that identity: a group's gid in its subgid range reaches what
// that group may (the owner group's admin.sock and audit log), a user's uid
// their files. And a boxmaker id inside another user's range is that
// user's to take. Apply must give the tools user a range no one holds, and
// refuse ranges that overlap.
func TestApplySubordinateRangesHoldNoOnesIDs(t *testing.T) {
	const start = 100000 // where apply starts on an empty subuid file
	cases := []struct {
		name           string
		subuid, subgid string // the files before apply; NAME is replaced by the tools user
		passwd, group  string // lines added to copies of /etc/passwd and /etc/group
		want           string // "" for success, else a piece of the error
	}{
		{name: "a user and a group hold ids where the tools' range would start",
			passwd: fmt.Sprintf("held:x:%d:%d::/nonexistent:/usr/sbin/nologin\n", start+7, start+5),
			group:  fmt.Sprintf("held:x:%d:\n", start+5)},
		{name: "a group holds the last id of the range after another's",
			subuid: "alice:100000:65536\n", subgid: "alice:100000:65536\n",
			group: fmt.Sprintf("late:x:%d:\n", start+65536+65535)},
		{name: "the tools user's range already holds a group's gid",
			subuid: fmt.Sprintf("NAME:%d:65536\n", start), subgid: fmt.Sprintf("NAME:%d:65536\n", start),
			group: fmt.Sprintf("held:x:%d:\n", start+100), want: "gid " + strconv.Itoa(start+100)},
		{name: "another user's range holds every system id",
			subuid: "alice:1:99999\n", subgid: "alice:1:99999\n", want: "alice's subordinate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := deploytest.Root(t, "/bin/true")
			plan := deploy.New(deploytest.Params(t, root))
			t.Cleanup(func() { deploytest.RemoveAccounts(t, plan) })
			tools := plan.UserFor("tools")
			sys := filepath.Join(root, "sysetc")
			if err := os.Mkdir(sys, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, extra := range map[string]string{"passwd": tc.passwd, "group": tc.group} {
				b, err := os.ReadFile("/etc/" + name)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sys, name), append(b, extra...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for name, text := range map[string]string{"subuid": tc.subuid, "subgid": tc.subgid} {
				if err := os.WriteFile(filepath.Join(sys, name), []byte(strings.ReplaceAll(text, "NAME", tools)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := deploy.Apply(plan, deploy.ApplyOptions{SysEtc: sys})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "see docs/runbook.md#deploy-subid-overlap") {
					t.Fatalf("Apply = %v, want a refusal naming %q (see docs/runbook.md#deploy-subid-overlap)", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			held := idsIn(t, filepath.Join(sys, "passwd"), 2)
			heldGIDs := idsIn(t, filepath.Join(sys, "group"), 2)
			for file, ids := range map[string][]int{"subuid": held, "subgid": heldGIDs} {
				path := filepath.Join(sys, file)
				first, err := deploy.SubordinateID(path, tools, 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if id >= first && id < first+65536 {
						b, _ := os.ReadFile(path)
						t.Errorf("%s gives %s a range [%d, %d) holding id %d, which is taken:\n%s", file, tools, first, first+65536, id, b)
					}
				}
			}
		})
	}
}

// idsIn is field n of every line of a passwd or group file, as numbers.
func idsIn(t *testing.T, path string, n int) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) > n {
			if id, err := strconv.Atoi(f[n]); err == nil {
				out = append(out, id)
			}
		}
	}
	return out
}
