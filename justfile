# boxmaker's developer commands. just is not a Debian package; without
# installing it, run any recipe as: npx --yes rust-just@1.57.0 <recipe>

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @{{just_executable()}} --list

# Everything a change must pass, in order; offline once modules are downloaded; never skips.
gate: && fuzz-short
    go run ./internal/gate gofmt
    go vet ./...
    go tool staticcheck ./...
    go run ./internal/gate imports filelen deps licences runbook
    go test -race ./...

# Build bin/boxmaker and its role symlinks beside it.
build:
    go build -o bin/boxmaker .
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

# The benchmarks.
bench:
    go test -run='^$' -bench=. -benchmem ./...
