package main

import "testing"

func TestStray(t *testing.T) {
	dir := gitTree(t, map[string]string{
		"a/good.go": "package a\n",
		"oom":       "",
		"a/b/oom":   "",
	}, "a/b/oom")
	problems, err := checkStray(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems, "a/b/oom: conmon's OOM marker", "oom: conmon's OOM marker")
	clean := gitTree(t, map[string]string{"a/good.go": "package a\n", "a/oom.go": "package a\n"})
	if problems, err := checkStray(clean); err != nil || len(problems) != 0 {
		t.Errorf("a clean tree: %q, %v", problems, err)
	}
}
