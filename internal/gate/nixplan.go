package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"boxmaker/deploy"
)

// nixEval is what nix/eval-check.nix evaluates to: plan.nix's mapping of
// deploy/plan.json, with each unit written out as NixOS writes it.
type nixEval struct {
	Users map[string]struct {
		IsSystemUser       bool     `json:"isSystemUser"`
		Group              string   `json:"group"`
		ExtraGroups        []string `json:"extraGroups"`
		Home               string   `json:"home"`
		CreateHome         bool     `json:"createHome"`
		AutoSubUIDGIDRange bool     `json:"autoSubUidGidRange"`
	} `json:"users"`
	Groups map[string]struct {
		Members []string `json:"members"`
	} `json:"groups"`
	OwnerGroup string `json:"ownerGroup"`
	Tmpfiles   struct {
		Home []string `json:"home"`
		Etc  []string `json:"etc"`
	} `json:"tmpfiles"`
	Units   map[string]map[string][]string `json:"units"`
	Configs map[string]any                 `json:"configs"`
	Build   struct {
		GoVersion string   `json:"goVersion"`
		Tags      []string `json:"tags"`
	} `json:"build"`
}

// nixPlan evaluates nix/eval-check.nix and compares it with the Go plan
// (deploy.New(deploy.Default()), which plan.json equals: deploy's own test
// holds that). Each difference is a problem: the module would not deploy
// the plan as the plan is.
func nixPlan(dir string) ([]string, error) {
	out, err := nixInstantiate(dir, "--eval", "--strict", "--json", evalCheck)
	if err != nil {
		return []string{fmt.Sprintf("%s does not evaluate: %v", evalCheck, err)}, nil
	}
	var got nixEval
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("%s: %w", evalCheck, err)
	}
	return comparePlan(deploy.New(deploy.Default()), got), nil
}

func comparePlan(plan deploy.Plan, got nixEval) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	// tmpfiles: the lines of the tmpfiles.d file deploy apply writes.
	var want []string
	for _, p := range plan.Paths {
		if p.Kind == deploy.KindFile && filepath.Dir(p.Path) == plan.TmpfilesDir {
			want = append(want, textLines(p.Text)...)
		}
	}
	if !slices.Equal(got.Tmpfiles.Home, want) {
		bad("tmpfiles rules differ from the plan's tmpfiles.d file:\n  nix: %q\n  go:  %q", got.Tmpfiles.Home, want)
	}

	if len(got.Users) != len(plan.Users) {
		bad("%d users, the plan has %d", len(got.Users), len(plan.Users))
	}
	for _, u := range plan.Users {
		n, ok := got.Users[u.Name]
		switch {
		case !ok:
			bad("user %s is missing", u.Name)
		case !n.IsSystemUser || n.CreateHome || n.Group != u.Name || n.Home != u.Home ||
			!slices.Equal(n.ExtraGroups, u.Groups) || n.AutoSubUIDGIDRange != u.SubIDs:
			bad("user %s: nix has %+v, the plan %+v", u.Name, n, u)
		}
	}
	if len(got.Groups) != len(plan.Groups) {
		bad("%d groups, the plan has %d", len(got.Groups), len(plan.Groups))
	}
	for _, g := range plan.Groups {
		if n, ok := got.Groups[g.Name]; !ok || !slices.Equal(n.Members, g.Members) {
			bad("group %s: nix has members %q (present: %v), the plan %q", g.Name, n.Members, ok, g.Members)
		}
	}
	if want := plan.Prefix + "owner"; got.OwnerGroup != want {
		bad("the owner group is %q, want %q", got.OwnerGroup, want)
	}

	// Units: every line of every section, as a set per section, equals
	// the unit file deploy apply writes.
	if len(got.Units) != len(plan.Units) {
		bad("%d units, the plan has %d", len(got.Units), len(plan.Units))
	}
	for _, u := range plan.Units {
		n, ok := got.Units[strings.TrimSuffix(u.Name, ".service")]
		if !ok {
			bad("unit %s is missing", u.Name)
			continue
		}
		for section, lines := range unitSections(u.Text()) {
			g := slices.Clone(n[section])
			slices.Sort(g)
			slices.Sort(lines)
			if !slices.Equal(g, lines) {
				bad("unit %s [%s] differs:\n  nix: %q\n  go:  %q", u.Name, section, g, lines)
			}
		}
	}

	// The seed configurations, read by Nix's fromTOML and by go-toml.
	for _, p := range plan.Paths {
		if p.Content != deploy.ContentSeed || !strings.HasSuffix(p.Path, ".toml") {
			continue
		}
		role := strings.TrimSuffix(filepath.Base(p.Path), ".toml")
		var seed any
		if err := toml.Unmarshal([]byte(p.Text), &seed); err != nil {
			bad("the plan's %s does not parse: %v", p.Path, err)
			continue
		}
		if !sameJSON(seed, got.Configs[role]) {
			bad("configuration %s: nix reads %v, go-toml %v", role, got.Configs[role], seed)
		}
	}
	if len(got.Build.Tags) == 0 || got.Build.GoVersion == "" {
		bad("nix/build.nix found no build tags in the justfile or no go version in go.mod: %+v", got.Build)
	}
	return problems
}

// textLines are a generated file's lines without its comments and blanks.
func textLines(text string) []string {
	var l []string
	for _, s := range strings.Split(text, "\n") {
		if s != "" && !strings.HasPrefix(s, "#") {
			l = append(l, s)
		}
	}
	return l
}

// unitSections splits a unit file into its sections' lines.
func unitSections(text string) map[string][]string {
	s := map[string][]string{}
	section := ""
	for _, line := range textLines(text) {
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.Trim(line, "[]")
			s[section] = []string{}
			continue
		}
		s[section] = append(s[section], line)
	}
	return s
}

// sameJSON compares two decoded values by their JSON, where numbers of
// either decoder compare equal.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	return json.Unmarshal(ja, &x) == nil && json.Unmarshal(jb, &y) == nil && reflect.DeepEqual(x, y)
}
