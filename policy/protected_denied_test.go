package policy

import (
	"syscall"
	"testing"
)

// A protected path under a directory brokerd may not search (deployed,
// Podman's rootful storage is root's 0700) is compared as written from
// there on; a grant path through such a directory still cannot be
// resolved, so it is refused.
func TestProtectedPathUnderADeniedDirectory(t *testing.T) {
	seen := func() map[string]lstatResult {
		return map[string]lstatResult{
			"/var":                    {mode: syscall.S_IFDIR},
			"/var/lib":                {mode: syscall.S_IFDIR},
			"/var/lib/containers":     {mode: syscall.S_IFDIR},
			"/var/lib/containers/sto": {err: syscall.EACCES},
		}
	}
	got, err := resolveProtected("/var/lib/containers/sto/overlay", seen())
	if err != nil || got != "/var/lib/containers/sto/overlay" {
		t.Fatalf("resolveProtected = %q, %v", got, err)
	}
	if _, err := resolveSeen("/var/lib/containers/sto/overlay", seen()); err == nil {
		t.Fatal("a grant path through a directory brokerd may not search was resolved")
	}
	// Any other error is still an error for the protected side.
	loop := seen()
	loop["/var/lib/containers/sto"] = lstatResult{err: syscall.ELOOP}
	if _, err := resolveProtected("/var/lib/containers/sto/overlay", loop); err == nil {
		t.Fatal("resolveProtected let an error other than EACCES through")
	}
}
