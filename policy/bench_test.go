package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"boxmaker/policy"
)

// BenchmarkDecide reads N grant files from disk at every call, as brokerd
// does: the cost is the directory read, N file reads and N decodes.
func BenchmarkDecide(b *testing.B) {
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
			b.ReportAllocs()
			for b.Loop() {
				if d := policy.Decide(dir, req, private, now); outcomeName(d) != "allowed" {
					b.Fatal(outcomeName(d))
				}
			}
		})
	}
}
