package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"boxmaker/policy"
	"boxmaker/wire"
)

// BenchmarkDecide reads N grant files from disk at every call, as brokerd
// does: the cost is the directory read, N file reads and N decodes.
func BenchmarkDecide(b *testing.B) {
	benchDecide(b, func(dir string) func(wire.ToolRequest) policy.Decision {
		return func(req wire.ToolRequest) policy.Decision { return policy.Decide(dir, req, private, now) }
	})
}

// BenchmarkGrantsDirDecide is the same through one GrantsDir, as brokerd
// decides: every file is still read at every call, but unchanged bytes are
// not decoded again.
func BenchmarkGrantsDirDecide(b *testing.B) {
	benchDecide(b, func(dir string) func(wire.ToolRequest) policy.Decision {
		g := policy.NewGrantsDir(dir, nil)
		return func(req wire.ToolRequest) policy.Decision { return g.Decide(req, private, now) }
	})
}

func benchDecide(b *testing.B, decider func(dir string) func(wire.ToolRequest) policy.Decision) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				content := fmt.Sprintf("tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n"+
					"result_class = \"private\"\nuntrusted = false\nexpires = \"2027-01-01T00:00:00.000Z\"\n\n"+
					"[constraints]\npaths = [\"/home/kyle/notes-%d\", \"/srv/data-%d\"]\n", i, i)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("grant-%04d.toml", i)), []byte(content), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			req := request("read_file", fmt.Sprintf(`{"path":"/home/kyle/notes-%d/a.md"}`, n-1))
			decide := decider(dir)
			b.ReportAllocs()
			for b.Loop() {
				if d := decide(req); outcomeName(d) != "allowed" {
					b.Fatal(outcomeName(d))
				}
			}
		})
	}
}
