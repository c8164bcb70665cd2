package podman

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/runner/runnertest"
	"boxmaker/wire"
)

var update = flag.Bool("update", false, "rewrite fixtures/podman and fixtures/toolkit from the cases in spec_test.go")

// goldenCases are one RunSpec per tool, as runner.Run builds them from a
// decision, and the container the runtime makes of each.
var goldenCases = []struct {
	tool, grant, args string
}{
	{"read_file", `paths = ["/home/kyle/notes"]`, `{"path":"/home/kyle/notes/a.md"}`},
	{"write_file", `paths = ["/home/kyle/out"]`, `{"path":"/home/kyle/out/a.md","content":"hello \"world\"\n"}`},
	{"shell", `paths = ["/home/kyle/scratch", "/srv/data"]`, `{"command":"ls -la | wc -l","cwd":"/srv/data"}`},
	{"http_fetch", `hosts = ["example.com", "*.example.org"]`, `{"url":"https://www.example.org/a?b=c"}`},
}

// randomParts are what differs between runs: the container's name and the
// egress proxy's directory.
var randomParts = regexp.MustCompile(`boxmaker-[0-9a-f]{16}|/[^"]*/boxmaker-egress-[0-9]+/`)

// TestGoldenSpecs compares, byte for byte, the JSON the bindings send to
// create each tool's container (a specgen.SpecGenerator, marshalled with
// encoding/json's sorted keys; the bindings' jsoniter writes the same
// members) and the toolkit request sent on its stdin.
func TestGoldenSpecs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Image = "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, tc := range goldenCases {
		rec := &runnertest.Recording{}
		grants := grantDir(t, map[string]string{"g.toml": grant(tc.tool, tc.grant)})
		call(t, rec, grants, tc.tool, tc.args)
		s := rec.Specs()[0]
		c := container{name: newName(), scope: "brokerd-0123456789abcdef0123456789abcdef", seccomp: "/var/lib/boxmaker/broker/podman/seccomp.json", call: "s-1/1", tool: s.Tool().String(), mounts: s.Mounts()}
		if _, ok := s.Egress(); ok {
			c.egress = "/tmp/boxmaker-egress-1234/egress.sock" // as egress.Start names it
		}
		b, err := json.MarshalIndent(specFor(cfg, c), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = randomParts.ReplaceAllFunc(b, func(m []byte) []byte {
			if bytes.HasPrefix(m, []byte("boxmaker-")) {
				return []byte("boxmaker-RANDOM")
			}
			return []byte("/TMP/boxmaker-egress-RANDOM/")
		})
		golden(t, filepath.Join("podman", tc.tool+".json"), append(b, '\n'))
		// The objects brokerd would have checked: made-up numbers, since
		// the golden paths do not exist here.
		var mounts []wire.ToolkitMount
		for i, m := range s.Mounts() {
			mounts = append(mounts, wire.ToolkitMount{Path: m.Path, Dev: 2049, Ino: uint64(1000 + i)})
		}
		req, err := requestFor(s.Args(), cfg.OutputBytes, mounts, nil)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("toolkit", "request-"+tc.tool+".json"), req.line)
	}
	golden(t, filepath.Join("toolkit", "request-probe.json"), probeRequest().line)
}

// golden compares got with fixtures/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "..", "..", "fixtures", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("fixtures/%s differs (run with -update to rewrite it, and review the diff):\n%s", name, got)
	}
}

// TestSpecInvariants checks, for every golden case, the properties the
// golden files show, so that a careless -update cannot lose one.
func TestSpecInvariants(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Image = "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range goldenCases {
		rec := &runnertest.Recording{}
		call(t, rec, grantDir(t, map[string]string{"g.toml": grant(tc.tool, tc.grant)}), tc.tool, tc.args)
		rs := rec.Specs()[0]
		c := container{name: "n", scope: "x", tool: tc.tool, mounts: rs.Mounts(), seccomp: "/p/seccomp.json"}
		if _, ok := rs.Egress(); ok {
			c.egress = "/tmp/e/egress.sock"
		}
		s := specFor(cfg, c)
		if s.NetNS.NSMode != "none" || !*s.ReadOnlyFilesystem || !*s.NoNewPrivileges || len(s.CapDrop) != 1 || s.CapDrop[0] != "ALL" ||
			s.User != DefaultUser || *s.Privileged || *s.EnvHost || *s.HTTPProxy || s.LogConfiguration.Driver != "none" {
			t.Errorf("%s: isolation settings lost: %+v", tc.tool, s)
		}
		if *s.ResourceLimits.Memory.Limit != cfg.MemoryBytes || s.ResourceLimits.Pids.Limit != cfg.Pids || len(s.Rlimits) != 3 ||
			*s.ResourceLimits.CPU.Quota != cfg.CPUMillicores*100 || s.SeccompProfilePath != "/p/seccomp.json" {
			t.Errorf("%s: limits lost", tc.tool)
		}
		var want []string
		for _, m := range rs.Mounts() {
			mode := "ro"
			if m.Writable {
				mode = "rw"
			}
			want = append(want, m.Path+"="+m.Path+":"+mode)
		}
		if c.egress != "" {
			want = append(want, c.egress+"="+egressPath+":rw")
		}
		var got []string
		var tmpfs []string
		for _, m := range s.Mounts {
			if m.Type == "tmpfs" {
				tmpfs = append(tmpfs, m.Destination+":"+strings.Join(m.Options[:3], ","))
				continue
			}
			got = append(got, m.Source+"="+m.Destination+":"+m.Options[1])
			if m.Options[0] != "bind" {
				t.Errorf("%s: %s is mounted %q, not a non-recursive bind", tc.tool, m.Destination, m.Options[0])
			}
		}
		if strings.Join(tmpfs, " ") != "/tmp:rw,nosuid,nodev /var/tmp:rw,nosuid,nodev /run:rw,nosuid,nodev" {
			t.Errorf("%s: tmpfs mounts %v", tc.tool, tmpfs)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") || len(s.Volumes)+len(s.OverlayVolumes)+len(s.ImageVolumes) != 0 {
			t.Errorf("%s: mounts %v, want %v", tc.tool, got, want)
		}
	}
}
