# boxmaker's developer commands. just is not a Debian package; without
# installing it, run any recipe as: npx --yes rust-just@1.57.0 <recipe>

set shell := ["bash", "-euo", "pipefail", "-c"]

# The Podman bindings that brokerd links need these build tags
# (docs/decisions.md, "Podman build tags"): every go command here gets them.
export GOFLAGS := `go env GOFLAGS` + " -tags=remote,exclude_graphdriver_btrfs,btrfs_noversion,exclude_graphdriver_devicemapper,containers_image_openpgp"

# List the recipes.
default:
    @{{just_executable()}} --list

# Everything a change must pass, in order; offline once modules are downloaded; never skips.
gate: podman-setup llama-setup nix-setup systemd-setup && fuzz-short
    go run ./internal/gate gofmt
    go vet ./...
    go tool staticcheck ./...
    go run ./internal/gate imports filelen deps licences runbook stray nix
    go test -race ./...
    go run ./internal/gate stray

# Build bin/boxmaker and its role symlinks beside it. Static (no cgo), so
# that brokerd image build can put it into the tool image as the toolkit.
build:
    CGO_ENABLED=0 go build -o bin/boxmaker .
    bin/boxmaker links bin

# The tests, without the race detector.
test:
    go test ./...

# Every fuzz target of every package, found by go test -list, a few seconds each.
fuzz-short:
    go run ./internal/gate -fuzztime=4s fuzz

# Every fuzz target, longer (just fuzz 5m), and the audit log's crash test with 2,000 kills.
fuzz time="60s":
    go run ./internal/gate -fuzztime={{time}} fuzz
    AUDIT_CRASH_ROUNDS=2000 go test -run 'TestCrash$' -count=1 ./audit

# The main job: the whole harness (Podman, brokerd with the tool image, the
# in-repository stand-in model, inferproxy, loopd) in a throwaway home, a chat
# with a tool call, an approval, a container run and a denial, then audit
# verify; everything stopped after. --interactive to type yourself.
# --model llama: the same chat against llama.cpp's own llama-server with
# scripted tiny models (just llama-setup first: its first run builds
# llama-server, about 5 minutes).
demo *args: podman-setup build
    CGO_ENABLED=0 go build -o bin/fakellama ./internal/fakellama/cmd/fakellama
    @if [[ " {{args}} " =~ [[:space:]]--?model(=|[[:space:]]+)llama[[:space:]] ]]; then echo "== just llama-setup: its first run builds llama-server (about 5 minutes on two cores)" && .ci/llama-setup >/dev/null && go build -o bin/tinymodel ./internal/tinymodel/cmd/tinymodel; fi
    go run ./internal/harness/cmd/demo {{args}}

# Build (or reuse) the real llama-server and the tiny models the tests run
# against, in /var/cache/boxmaker/llama (.ci/llama-setup: .ci/llama-build,
# then internal/tinymodel); it prints the BOXMAKER_TEST_LLAMA_* variables.
llama-setup:
    .ci/llama-setup

# Install Debian's nix-bin (as root): the gate's nix check parses every .nix
# file and evaluates the NixOS module's plan mapping without nixpkgs.
nix-setup:
    .ci/nix-setup

# Install debootstrap and systemd-container and make (or reuse) the Debian 12
# tree in /var/cache/boxmaker/nspawn (about 90 s the first time), where
# deploy's tests boot the generated units with systemd-nspawn (as root).
systemd-setup:
    .ci/systemd-setup

# Install and configure Podman for the tool runner on Debian 12 (as root).
podman-setup:
    .ci/podman-setup

# Build the tool image from bin/boxmaker into the Podman service brokerd.toml
# names, and print its id for brokerd.toml's [podman] image.
image config: build
    bin/brokerd image build --config {{config}}

# The benchmarks.
bench:
    go test -run='^$' -bench=. -benchmem ./...

# The notes benchmark of issue 17 (10,000 notes of 1 KiB): search latency, and
# the index rebuild as a ratio to reading and decoding the notes once. The
# ratio is x-read, each rebuild timed against a read right after it (the
# same load), with the same ratio of CPU time and the separate times beside it.
bench-notes:
    go test -run='^$' -bench='^Benchmark(Search|Rebuild|ReadNotes)$' -benchtime=2s -benchmem ./roles/brokerd/internal/notes \
      | tee /dev/stderr \
      | awk '{ name = $1; sub(/-[0-9]+$/, "", name); for (i = 3; i < NF; i++) v[name, $(i+1)] = $i } \
          END { x = v["BenchmarkRebuild", "x-read"]; c = v["BenchmarkRebuild", "x-read-cpu"]; r = v["BenchmarkRebuild", "ns/op"]; n = v["BenchmarkReadNotes", "ns/op"]; p = v["BenchmarkSearch", "p50-ms"]; \
            if (x == "" || r == "" || n == "" || p == "") { print "bench-notes: a benchmark did not report" > "/dev/stderr"; exit 1 } \
            printf "rebuild/read ratio: %.2f (CPU time: %.2f; rebuild %.0f ms, read alone %.0f ms)\nsearch p50: %s ms\nsearch p95: %s ms\n", x, c, r / 1e6, n / 1e6, p, v["BenchmarkSearch", "p95-ms"] }'

# Issue 26: one tool call's stages on broker.sock (read_file and shell
# "true"), each as a share of the call, and their p50s as ratios to a bare
# "runc run" of a prepared bundle measured in the same run, interleaved (as
# root; the target is at most 2).
bench-calls:
    go test -run='^$' -bench='^BenchmarkCallStages$' -benchtime=1x ./roles/brokerd/internal/podman
