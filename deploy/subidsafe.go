package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"boxmaker/runbook"
)

// The tools user runs rootless Podman: newuidmap and newgidmap let it run a
// process as any host id of its subordinate ranges. A range that holds an
// id someone already has hands that identity to the tools user and to every
// container: a group's gid reaches what the group may (the owner group's
// admin.sock and audit log), a user's uid their files. The other way round,
// a boxmaker user or group whose id lies in someone else's range is theirs
// to take. Apply gives the tools user a range no one holds and refuses
// ranges that overlap (issue 29).

// takenIDs is every id the passwd file (for subuid) or group file (for
// subgid) under SysEtc gives out, with its name. os/user cannot list them,
// and the local files are what useradd and groupadd write; ids from NSS
// (LDAP) are not seen.
func (a *applier) takenIDs(subFile string) (map[uint64]string, error) {
	file := map[string]string{"subuid": "passwd", "subgid": "group"}[subFile]
	f, err := os.Open(filepath.Join(a.opts.SysEtc, file))
	if errors.Is(err, os.ErrNotExist) {
		return map[uint64]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[uint64]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if id, err := strconv.ParseUint(fields[2], 10, 32); err == nil {
			out[id] = fields[0]
		}
	}
	return out, sc.Err()
}

// freeStart is the first start at or after 100000 and after every range
// already given whose subIDCount ids no one holds.
func freeStart(ranges []subRange, taken map[uint64]string) (uint64, error) {
	start := uint64(100000)
	for _, r := range ranges {
		start = max(start, r.start+r.count)
	}
	ids := make([]uint64, 0, len(taken))
	for id := range taken {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if id >= start && id < start+subIDCount {
			start = id + 1
		}
	}
	if start+subIDCount > math.MaxUint32 {
		return 0, fmt.Errorf("no free range of %d ids is left", subIDCount)
	}
	return start, nil
}

// subIDConflicts says where a subordinate range and an id overlap: the
// tools user's range holding an id someone has, or a boxmaker user's uid
// or group's gid inside another name's range.
func (a *applier) subIDConflicts() []string {
	var out []string
	for _, kind := range []struct{ file, id string }{{"subuid", "uid"}, {"subgid", "gid"}} {
		path := filepath.Join(a.opts.SysEtc, kind.file)
		ranges, err := readSubIDRanges(path)
		if err != nil {
			out = append(out, fmt.Sprintf("%v (apply must know which ids each range holds); %s", err, runbook.See("deploy-subid-overlap")))
			continue
		}
		taken, err := a.takenIDs(kind.file)
		if err != nil {
			out = append(out, fmt.Sprintf("%v (apply must know which ids are taken); %s", err, runbook.See("deploy-subid-overlap")))
			continue
		}
		for _, u := range a.plan.Users {
			if !u.SubIDs {
				continue
			}
			for _, r := range ranges {
				if r.name != u.Name {
					continue
				}
				for id, name := range taken {
					if r.holds(id) && name != u.Name {
						out = append(out, fmt.Sprintf("%s gives %s the subordinate %ss [%d, %d), which hold %s %d (%s): %s could become it; %s",
							path, u.Name, kind.id, r.start, r.start+r.count, kind.id, id, name, u.Name, runbook.See("deploy-subid-overlap")))
					}
				}
			}
		}
		for name, id := range a.planIDs(kind.id) {
			for _, r := range ranges {
				if r.name != name && r.holds(id) {
					out = append(out, fmt.Sprintf("%s %d of %s lies in %s's subordinate %ss [%d, %d) in %s: %s could become it; %s",
						kind.id, id, name, r.name, kind.id, r.start, r.start+r.count, path, r.name, runbook.See("deploy-subid-overlap")))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// planIDs is the uid of every plan user that exists ("uid"), or the gid of
// every plan group that exists ("gid"), by name.
func (a *applier) planIDs(kind string) map[string]uint64 {
	out := map[string]uint64{}
	if kind == "uid" {
		for _, u := range a.plan.Users {
			if pu, err := user.Lookup(u.Name); err == nil {
				if id, err := strconv.ParseUint(pu.Uid, 10, 32); err == nil {
					out[u.Name] = id
				}
			}
		}
		return out
	}
	for _, g := range a.plan.Groups {
		if pg, err := user.LookupGroup(g.Name); err == nil {
			if id, err := strconv.ParseUint(pg.Gid, 10, 32); err == nil {
				out[g.Name] = id
			}
		}
	}
	return out
}
