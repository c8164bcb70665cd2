package podman

import (
	"os"
	"strings"
	"testing"

	"boxmaker/roles/brokerd/internal/podman/podmantest"
)

// TestJustfileHasTheBuildTags: the justfile's GOFLAGS, which every go
// command of the gate gets, names the same tags the tests build the
// static toolkit with.
func TestJustfileHasTheBuildTags(t *testing.T) {
	b, err := os.ReadFile("../../../../justfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `export GOFLAGS := `+"`go env GOFLAGS`"+` + " -tags=`+podmantest.BuildTags+`"`) {
		t.Fatalf("the justfile does not export GOFLAGS with -tags=%s", podmantest.BuildTags)
	}
}
