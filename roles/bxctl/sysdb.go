package bxctl

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The users, groups and subordinate ids `grants check --fix` needs, read
// from the files in etc (/etc; tests give a directory of their own), as
// deploy apply reads them: the shadow tools' files are the truth on the
// hosts boxmaker deploys to, and reading them needs no cgo or NSS.

type sysUser struct {
	name     string
	uid, gid uint32
	home     string
}

type sysGroup struct {
	name    string
	gid     uint32
	members []string
}

type sysDB struct {
	users  []sysUser
	groups []sysGroup
	etc    string
}

func readSysDB(etc string) (*sysDB, error) {
	db := &sysDB{etc: etc}
	err := eachLine(filepath.Join(etc, "passwd"), 7, func(f []string) error {
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad uid or gid")
		}
		db.users = append(db.users, sysUser{f[0], uint32(uid), uint32(gid), f[5]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(etc, "group"), 4, func(f []string) error {
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return fmt.Errorf("bad gid")
		}
		var members []string
		if f[3] != "" {
			members = strings.Split(f[3], ",")
		}
		db.groups = append(db.groups, sysGroup{f[0], uint32(gid), members})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// eachLine calls fn with the n colon-separated fields of every line of
// path that is not empty or a comment.
func eachLine(path string, n int, fn func([]string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Split(l, ":")
		if len(fields) != n {
			return fmt.Errorf("%s:%d: want %d fields", path, line, n)
		}
		if err := fn(fields); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
	}
	return sc.Err()
}

func (db *sysDB) user(name string) (sysUser, error) {
	for _, u := range db.users {
		if u.name == name {
			return u, nil
		}
	}
	return sysUser{}, fmt.Errorf("no user %s in %s", name, filepath.Join(db.etc, "passwd"))
}

// principal is u with its primary group and every group listing it.
func (db *sysDB) principal(u sysUser) principal {
	gids := []uint32{u.gid}
	for _, g := range db.groups {
		if slices.Contains(g.members, u.name) && !slices.Contains(gids, g.gid) {
			gids = append(gids, g.gid)
		}
	}
	return principal{name: u.name, uid: u.uid, gids: gids}
}

// members is every user in group name: those it lists and those whose
// primary group it is.
func (db *sysDB) members(name string) ([]sysUser, error) {
	i := slices.IndexFunc(db.groups, func(g sysGroup) bool { return g.name == name })
	if i < 0 {
		return nil, fmt.Errorf("no group %s in %s", name, filepath.Join(db.etc, "group"))
	}
	g := db.groups[i]
	var out []sysUser
	for _, u := range db.users {
		if u.gid == g.gid || slices.Contains(g.members, u.name) {
			out = append(out, u)
		}
	}
	return out, nil
}

// subordinate is the host id that id inside a rootless container of
// user name maps to, from file (subuid or subgid): id n is the (n-1)th of
// the user's range. A user with several ranges is refused: Podman joins
// them in an order this command would have to guess.
func (db *sysDB) subordinate(file, name string, id uint32) (uint32, error) {
	path := filepath.Join(db.etc, file)
	var ranges [][2]uint64
	err := eachLine(path, 3, func(f []string) error {
		if f[0] != name {
			return nil
		}
		start, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("want name:start:count")
		}
		ranges = append(ranges, [2]uint64{start, count})
		return nil
	})
	switch {
	case err != nil:
		return 0, err
	case len(ranges) != 1:
		return 0, fmt.Errorf("%s has %d ranges in %s; the tools' uid is certain only with one", name, len(ranges), path)
	case id < 1 || uint64(id) > ranges[0][1] || ranges[0][0]+uint64(id)-1 > 0xFFFFFFFE:
		return 0, fmt.Errorf("%s's range in %s does not hold id %d", name, path, id)
	}
	return uint32(ranges[0][0] + uint64(id) - 1), nil
}
