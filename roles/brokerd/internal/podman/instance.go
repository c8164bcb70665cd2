package podman

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"boxmaker/roles/brokerd/internal/ownfile"
	"boxmaker/runbook"
	"boxmaker/wire"
)

// instanceFile holds this brokerd's instance id, in its Podman state
// directory. Every container brokerd creates carries "brokerd-<id>" as its
// labelScope, and startup cleanup removes only containers with that label:
// a second brokerd on the same Podman service (another owner, a test, a
// staging copy) has its own state directory, so its own id, and keeps its
// running calls; a restarted brokerd reads the same id and removes what it
// left itself (docs/decisions.md, "Whose containers cleanup removes").
const instanceFile = "instance"

var instanceID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// instanceScope reads the instance id in dir, making one the first time,
// and returns the scope label's value.
func instanceScope(dir string) (string, error) {
	path := filepath.Join(dir, instanceFile)
	// ownfile (issue 29, class 1): only "no such name" makes a new id. A
	// dangling link would make a new id and orphan this brokerd's
	// containers, a link to another brokerd's file would adopt its scope
	// and let cleanup remove its running calls, and a FIFO would stall the
	// start.
	b, err := ownfile.Read(path, 64)
	if errors.Is(err, fs.ErrNotExist) {
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		id := hex.EncodeToString(raw[:])
		// Another brokerd of this state directory cannot be running (the
		// audit lock is held), so write and rename is enough.
		if err := writeFileAtomic(path, []byte(id+"\n"), 0o644); err != nil {
			return "", fmt.Errorf("podman: writing the instance id: %w", err)
		}
		return "brokerd-" + id, nil
	}
	if err != nil {
		return "", fmt.Errorf("podman: reading the instance id: %w; %s", err, runbook.See("podman-instance-unreadable"))
	}
	id := strings.TrimSuffix(string(b), "\n")
	if !instanceID.MatchString(id) {
		return "", fmt.Errorf("podman: %s is not an instance id (32 hex digits); remove it only if no tool container of this brokerd is left; %s",
			path, runbook.See("podman-instance-unreadable"))
	}
	return "brokerd-" + id, nil
}

// prepareStateDir makes brokerd's Podman state directory, with the
// instance id. It holds nothing secret. Without a shared_dir the seccomp
// profile is written there too (prepareShared).
func prepareStateDir(dir string) (scope string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("podman: making the state directory: %w", err)
	}
	return instanceScope(dir)
}

// containerFor is a new container of this runtime for tool: its own name,
// this instance's scope and the seccomp profile.
func (r *Runtime) containerFor(tool string) container {
	return container{name: newName(), scope: r.scope, tool: tool, seccomp: r.seccomp}
}

// callLabel is labelCall's value: "<session>/<call>". Every container of a
// call carries it (RunSpec.Call), so that whoever lists containers sees
// whose each one is.
func callLabel(session wire.SessionID, call wire.CallID) string {
	return fmt.Sprintf("%s/%d", session, call)
}
