package audit

import (
	"strings"
	"testing"
)

// TestLeftoversSeesAWriter checks the leak check itself: an open Writer's
// committer is reported until Close.
func TestLeftoversSeesAWriter(t *testing.T) {
	w, _ := openT(t, logDir(t), newClock(day0), Options{})
	// Match what Open started, whether or not it has run yet.
	if !strings.Contains(leftovers(0), "created by boxmaker/audit.Open") {
		closeT(t, w)
		t.Fatal("the committer of an open Writer is not seen")
	}
	closeT(t, w)
}
