package jobs

import (
	"testing"

	"boxmaker/wire"
)

// TestWireNames: each trigger and result maps to the wire value of the
// same name, which is what the audit log and bxctl jobs show.
func TestWireNames(t *testing.T) {
	for _, tr := range []Trigger{Scheduled, CatchUp, Manual} {
		if tr.Wire().String() != tr.String() {
			t.Errorf("trigger %s is %s on the wire", tr, tr.Wire())
		}
	}
	for _, r := range []Result{ResultPost, ResultNote, ResultBoth} {
		if r.Wire().String() != r.String() {
			t.Errorf("result %s is %s on the wire", r, r.Wire())
		}
	}
	if (Trigger(0)).Wire() != wire.TriggerScheduled {
		t.Error("an unknown trigger is not recorded as scheduled")
	}
}
