package deploy

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// subIDCount is the size of the tools user's subordinate range: a whole
// 16-bit id space, so a container's uid 65534 (nobody, the tools' user)
// maps inside it.
const subIDCount = 65536

// hasSubIDs reports whether name has a range in both subuid and subgid.
func (a *applier) hasSubIDs(name string) (bool, error) {
	for _, file := range []string{"subuid", "subgid"} {
		ranges, err := readSubIDs(filepath.Join(a.opts.SysEtc, file))
		if err != nil {
			return false, err
		}
		if _, ok := ranges[name]; !ok {
			return false, nil
		}
	}
	return true, nil
}

// addSubIDs gives name a range after every range already given, in each
// file that lacks one (useradd --system gives none), and holding no id a
// user (subuid) or group (subgid) already has: the tools user can become
// every id of its range (issue 29).
func (a *applier) addSubIDs(name string) error {
	for _, file := range []string{"subuid", "subgid"} {
		path := filepath.Join(a.opts.SysEtc, file)
		ranges, err := readSubIDRanges(path)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ranges, func(r subRange) bool { return r.name == name }) {
			continue
		}
		taken, err := a.takenIDs(file)
		if err != nil {
			return err
		}
		start, err := freeStart(ranges, taken)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "%s:%d:%d\n", name, start, subIDCount)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// subRange is one line of a subuid or subgid file.
type subRange struct {
	name         string
	start, count uint64
}

func (r subRange) holds(id uint64) bool { return id >= r.start && id < r.start+r.count }

// readSubIDs reads a subuid or subgid file: name to [start, count] (a name
// with several lines: its last). A missing file has no ranges.
func readSubIDs(path string) (map[string][2]uint64, error) {
	ranges, err := readSubIDRanges(path)
	if err != nil {
		return nil, err
	}
	out := map[string][2]uint64{}
	for _, r := range ranges {
		out[r.name] = [2]uint64{r.start, r.count}
	}
	return out, nil
}

// readSubIDRanges is every line of a subuid or subgid file, in order.
func readSubIDRanges(path string) ([]subRange, error) {
	var out []subRange
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want name:start:count", path, n)
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: want name:start:count", path, n)
		}
		out = append(out, subRange{fields[0], start, count})
	}
	return out, sc.Err()
}

// SubordinateID is the host id that id (at least 1) inside a rootless
// container of name maps to, from a subuid or subgid file: container id 0
// is name itself, id n is the (n-1)th of name's range.
func SubordinateID(file, name string, id int) (int, error) {
	ranges, err := readSubIDs(file)
	if err != nil {
		return 0, err
	}
	r, ok := ranges[name]
	if !ok || id < 1 || uint64(id) > r[1] {
		return 0, fmt.Errorf("%s: %s has no range holding id %d", file, name, id)
	}
	return int(r[0]) + id - 1, nil
}
