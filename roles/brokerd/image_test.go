package brokerd

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestImageBuildChecksTheWholeConfig: image build reads brokerd.toml as
// serve does, so a key serve refuses (a case variant in [podman], or one
// in any other section) is refused here too, with its line, before Podman
// is asked anything.
func TestImageBuildChecksTheWholeConfig(t *testing.T) {
	for name, tc := range map[string]struct{ extra, want string }{
		"case variant in [podman]": {"[podman]\nImage = \"x\"\n", `:6: unknown key "podman.Image"`},
		"unknown section":          {"[podmen]\nsocket = \"x\"\n", `:5: unknown key "podmen"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, config := home(t) // [paths] on lines 1 to 4
			f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(tc.extra)
			f.Close()
			var out, errs bytes.Buffer
			code := Main("brokerd", []string{"image", "build", "--config", config}, strings.NewReader(""), &out, &errs)
			want := "brokerd: " + config + tc.want + "\n"
			if code != 1 || out.Len() != 0 || errs.String() != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out.String(), errs.String(), want)
			}
		})
	}
}
