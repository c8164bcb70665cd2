package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// The demo's grants: an ask grant for reading the notes, an auto grant for
// a shell in the scratch folder, and a deny grant for writing the notes.
// http_fetch has no grant at all. remember and recall (issue 17) are auto
// and trusted: what a recall reads is labelled by each note's own label,
// not the grant. The [[ ]] are filled with the home.
var grants = map[string]string{
	"notes-read.toml": `tool = "read_file"
mode = "ask"
max_taint = "secret"
result_class = "private"
untrusted = false

[constraints]
paths = ["[[notes]]"]
`,
	"scratch-shell.toml": `tool = "shell"
mode = "auto"
max_taint = "secret"
result_class = "private"

[constraints]
paths = ["[[scratch]]"]
`,
	"memory-remember.toml": `tool = "remember"
mode = "auto"
max_taint = "secret"
untrusted = false
`,
	"memory-recall.toml": `tool = "recall"
mode = "auto"
max_taint = "secret"
untrusted = false
`,
	"notes-write.toml": `tool = "write_file"
mode = "deny"
max_taint = "secret"

[constraints]
paths = ["[[notes]]"]
`,
}

const containersConf = `[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`

func (h *Harness) fill(s string) string {
	return strings.NewReplacer("[[home]]", h.Home, "[[notes]]", h.Notes(), "[[scratch]]", h.Scratch(),
		"[[podman]]", "unix://"+h.podmanSocket(), "[[upstream]]", h.upstream).Replace(s)
}

// SecretsDir is brokerd's secrets directory ([paths] secrets).
func (h *Harness) SecretsDir() string { return filepath.Join(h.Home, "secrets") }

// GrantsDir is brokerd's grants directory, read at every decision.
func (h *Harness) GrantsDir() string { return filepath.Join(h.Home, "grants") }

// JobsDir is brokerd's jobs directory ([paths] jobs, issue 17); a test
// writes its job files there.
func (h *Harness) JobsDir() string { return filepath.Join(h.Home, "jobs") }

func (h *Harness) writeHome() error {
	// The owner's files are outside the home: no grant may reach it.
	files := map[string]string{
		"../notes/today.md":      "# Today\n\n- Water the plants.\n- Call Ana about the boat.\n",
		"../scratch/build.log":   "ok\n",
		"../scratch/todo.txt":    "nothing yet\n",
		"memory/core.md":         "The owner is trying boxmaker's demo.\n",
		"podman/containers.conf": containersConf,
	}
	for name, text := range grants {
		files["grants/"+name] = text
	}
	for name, text := range files {
		path := filepath.Join(h.Home, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(h.fill(text)), 0o644); err != nil {
			return err
		}
	}
	// The secrets directory is brokerd's alone, and empty: a test puts
	// its secret there (SecretsDir).
	if err := os.Mkdir(h.SecretsDir(), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(h.JobsDir(), 0o700); err != nil {
		return err
	}
	// The home itself is the owner's only (run/ and audit/ live in it).
	return os.Chmod(h.Home, 0o700)
}

func (h *Harness) startPodman(ctx context.Context) error {
	root := filepath.Join(h.Home, "podman")
	// In its own directory: conmon writes an "oom" file into the service's
	// working directory when a container is OOM-killed, and the harness
	// runs from the repository.
	p, err := h.spawnIn(root, "podman", "podman", "--root", filepath.Join(root, "storage"), "--runroot", filepath.Join(root, "run"),
		"system", "service", "--time=0", "unix://"+h.podmanSocket())
	if err != nil {
		return err
	}
	h.podman = p
	return h.waitSocket(ctx, p, h.podmanSocket())
}

var imageLine = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// buildImage builds the tool image into this harness's Podman with brokerd's
// own command and returns its id.
func (h *Harness) buildImage(ctx context.Context) (string, error) {
	cfg := filepath.Join(h.Home, "etc", "image.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(cfg, []byte(h.fill("[paths]\nhome = \"[[home]]\"\n[podman]\nsocket = \"[[podman]]\"\n")), 0o600); err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := execIn(ctx, h, filepath.Join(h.o.Bin, "brokerd"), "image", "build", "--config", cfg)
	cmd.Stdout = &out
	cmd.Stderr = &prefixWriter{w: h.o.Log, prefix: "image: "}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("harness: brokerd image build: %w", err)
	}
	id := imageLine.FindString(out.String())
	if id == "" {
		return "", errNoImage
	}
	return id, nil
}

func (h *Harness) writeConfigs(image string) error {
	configs := map[string]string{
		"brokerd.toml": fmt.Sprintf(`[paths]
home = "[[home]]"
grants = "[[home]]/grants"
secrets = "[[home]]/secrets"
jobs = "[[home]]/jobs"

[sockets]
loop = "[[home]]/run/broker-loop/loop.sock"

[approvals]
ttl_ms = %d

[podman]
socket = "[[podman]]"
image = "%s"
user = "%s"
`, h.o.TTLMs, image, toolUser()),
		"inferproxy.toml": `[upstream]
url = "[[upstream]]"

[listen]
socket = "[[home]]/run/loop-infer/infer.sock"
`,
		"loopd.toml": `[paths]
home = "[[home]]"

[model]
socket = "[[home]]/run/loop-infer/infer.sock"

[listen]
socket = "[[home]]/run/owner-loop/loop.sock"
jobs = "[[home]]/run/broker-loop/loop.sock"

[broker]
socket = "[[home]]/run/loop-broker/broker.sock"
`,
	}
	if m := h.o.Mattermost; m != nil {
		configs["brokerd.toml"] = strings.Replace(configs["brokerd.toml"], "[sockets]\n", "[sockets]\ngateway = \"[[home]]/run/broker-gateway/gateway.sock\"\n", 1)
		configs["loopd.toml"] = strings.Replace(configs["loopd.toml"], "[listen]\n", "[listen]\ngateway = \"[[home]]/run/gateway-loop/loop.sock\"\n", 1)
		token := filepath.Join(h.Home, "etc", "gatewayd.token")
		if err := os.WriteFile(token, []byte(m.Token+"\n"), 0o600); err != nil {
			return err
		}
		configs["gatewayd.toml"] = fmt.Sprintf("[mattermost]\nurl = %q\ntoken_file = %q\nowners = [\"%s\"]\n\n[paths]\nhome = \"[[home]]\"\n",
			m.URL, token, strings.Join(m.Owners, `", "`))
	}
	for name, text := range configs {
		if name == "inferproxy.toml" {
			continue // written once the model's address is known
		}
		if err := os.WriteFile(filepath.Join(h.Home, "etc", name), []byte(h.fill(text)), 0o600); err != nil {
			return err
		}
	}
	h.inferproxyConf = configs["inferproxy.toml"]
	return nil
}

// writeInferproxyConf writes inferproxy's config, which names the model's
// address.
func (h *Harness) writeInferproxyConf() error {
	return os.WriteFile(filepath.Join(h.Home, "etc", "inferproxy.toml"), []byte(h.fill(h.inferproxyConf)), 0o600)
}

// toolUser is who the tools run as: the owner, unless the owner is root,
// which brokerd never lets a tool be (then nobody, who can read the demo's
// world-readable notes but write nothing).
func toolUser() string {
	if os.Getuid() == 0 {
		return "65534:65534"
	}
	return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
}

func execIn(ctx context.Context, h *Harness, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "BOXMAKER_HOME="+h.Home,
		"CONTAINERS_CONF="+filepath.Join(h.Home, "podman", "containers.conf"))
	return cmd
}
