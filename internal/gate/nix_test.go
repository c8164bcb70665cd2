package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"boxmaker/deploy"
)

// The repository's root, where flake.nix and nix/ are.
const repoRoot = "../.."

// A good and a bad .nix file: only the bad one is a problem, named with
// nix's own message; an untracked-but-not-ignored file is checked too.
func TestNixParse(t *testing.T) {
	dir := gitTree(t, map[string]string{
		"good.nix":       "{ a = 1; b = x: x + 1; }\n",
		"nix/bad.nix":    "{ a = 1; b = ; }\n",
		"new/broken.nix": "let in in\n",
		"notnix.txt":     "{ = \n",
	}, "new/broken.nix")
	problems, err := nixParse(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems, "nix/bad.nix does not parse: ", "new/broken.nix does not parse: ")
}

// Without nix-instantiate the check fails and says how to install it.
func TestNixMissingFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := checkNix(repoRoot)
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y nix-bin") {
		t.Fatalf("checkNix without nix-instantiate: %v, want a failure naming nix-bin", err)
	}
}

// The repository's own .nix files parse, and the module's pure part maps
// the committed plan exactly as the Go plan is.
func TestNixRepository(t *testing.T) {
	problems, err := checkNix(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	assertProblems(t, problems)
}

// The comparison finds drift: each change to what Nix made is a problem.
func TestComparePlanFindsDrift(t *testing.T) {
	out, err := nixInstantiate(repoRoot, "--eval", "--strict", "--json", evalCheck)
	if err != nil {
		t.Fatal(err)
	}
	plan := deploy.New(deploy.Default())
	fresh := func() nixEval {
		var e nixEval
		if err := json.Unmarshal(out, &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		name   string
		want   []string
		change func(*nixEval)
	}{
		{"a tmpfiles mode", []string{"tmpfiles rules differ"}, func(e *nixEval) {
			e.Tmpfiles.Home[1] = strings.Replace(e.Tmpfiles.Home[1], "0700", "0755", 1)
		}},
		{"a tmpfiles line lost", []string{"tmpfiles rules differ"}, func(e *nixEval) { e.Tmpfiles.Home = e.Tmpfiles.Home[1:] }},
		{"a user lost", []string{"user boxmaker-tools is missing", "4 users, the plan has 5"}, func(e *nixEval) { delete(e.Users, "boxmaker-tools") }},
		{"subids lost", []string{"user boxmaker-tools: "}, func(e *nixEval) {
			u := e.Users["boxmaker-tools"]
			u.AutoSubUIDGIDRange = false
			e.Users["boxmaker-tools"] = u
		}},
		{"a pair group's member", []string{"group boxmaker-loop-broker"}, func(e *nixEval) {
			e.Groups["boxmaker-loop-broker"] = struct {
				Members []string `json:"members"`
			}{[]string{"boxmaker-gatewayd"}}
		}},
		{"a repeated key collapsed", []string{"unit boxmaker-loopd.service [Service] differs"}, func(e *nixEval) {
			s := e.Units["boxmaker-loopd"]["Service"]
			e.Units["boxmaker-loopd"]["Service"] = slices.DeleteFunc(slices.Clone(s), func(l string) bool { return l == "SystemCallFilter=~@privileged" })
		}},
		{"an After lost", []string{"unit boxmaker-gatewayd.service [Unit] differs"}, func(e *nixEval) {
			e.Units["boxmaker-gatewayd"]["Unit"] = e.Units["boxmaker-gatewayd"]["Unit"][:1]
		}},
		{"a seed value", []string{"configuration inferproxy"}, func(e *nixEval) {
			e.Configs["inferproxy"].(map[string]any)["upstream"] = map[string]any{"url": "http://elsewhere"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p := comparePlan(plan, fresh()); len(p) != 0 {
				t.Fatalf("unchanged: %q", p)
			}
			e := fresh()
			c.change(&e)
			assertProblems(t, comparePlan(plan, e), c.want...)
		})
	}
}

// The options the module passes to plan.nix land where they should:
// the package's bin in commands, a credential's new source, a secret
// added to brokerd, the owners in the owner group, a setting merged over
// the seed without losing the seed's other keys.
func TestNixPlanOptions(t *testing.T) {
	expr := `let
  plan = builtins.fromJSON (builtins.readFile ./deploy/plan.json);
  m = import ./nix/plan.nix {
    inherit plan;
    bin = "/nix/store/x-boxmaker/bin";
    programs.podman = "/nix/store/y-podman/bin/podman";
    owners = [ "alice" ];
    credentials = { gatewayd.mattermost-token = "/var/keys/token"; brokerd.api-key = "/var/keys/api"; };
    settings.inferproxy.upstream.url = "http://10.0.0.1:9000";
  };
in {
  loopd = m.services.boxmaker-loopd.serviceConfig.ExecStart;
  tools = m.services.boxmaker-tools.serviceConfig.ExecStart;
  token = m.services.boxmaker-gatewayd.serviceConfig.LoadCredential;
  secrets = m.services.boxmaker-brokerd.serviceConfig.LoadCredential;
  owner = m.groups.${m.ownerGroup}.members;
  upstream = m.configs.inferproxy.upstream.url;
  listen = m.configs.inferproxy.listen.socket;
  secretsDir = m.credentialsDir "brokerd";
}`
	out, err := nixInstantiate(repoRoot, "--eval", "--strict", "--json", "-E", expr)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Loopd, Tools, Upstream, Listen, SecretsDir string
		Token, Secrets, Owner                      []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"loopd's command", got.Loopd, "/nix/store/x-boxmaker/bin/loopd serve --config /etc/boxmaker/loopd.toml"},
		{"tools' command", got.Tools, "/nix/store/y-podman/bin/podman --storage-driver=overlay system service --time=0 unix:///var/lib/boxmaker/run/broker-tools/podman.sock"},
		{"the token", strings.Join(got.Token, ","), "mattermost-token:/var/keys/token"},
		{"brokerd's secrets", strings.Join(got.Secrets, ","), "api-key:/var/keys/api"},
		{"the owner group", strings.Join(got.Owner, ","), "alice"},
		{"the upstream", got.Upstream, "http://10.0.0.1:9000"},
		{"the seed's listen socket", got.Listen, "/var/lib/boxmaker/run/loop-infer/infer.sock"},
		{"brokerd's credentials", got.SecretsDir, "/run/credentials/boxmaker-brokerd.service"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}
