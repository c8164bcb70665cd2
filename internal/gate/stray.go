package main

import (
	"fmt"
	"path"
	"strings"
)

// strayNames are files that only a misplaced process writes into the
// repository: conmon writes "oom" into the Podman service's working
// directory when a container is OOM-killed. Every Podman service the
// project starts (podmantest, the harness, .ci/run) runs in a directory of
// its own; one of these here means one did not.
var strayNames = map[string]string{
	"oom": "conmon's OOM marker: a Podman service ran with this directory as its working directory",
}

// checkStray fails on any stray file, tracked or new (not ignored).
func checkStray(dir string) ([]string, error) {
	out, err := command(dir, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var problems []string
	seen := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		if why, ok := strayNames[path.Base(f)]; ok {
			problems = append(problems, fmt.Sprintf("%s: %s; remove it (and git rm it if tracked)", f, why))
		}
	}
	return problems, nil
}
