package podman

// WaitQuiet waits until the runtime does nothing in the background: no
// container being made ahead, none being removed after its call. The
// benchmarks call it to space calls as a chat does, where the model's
// turn comes between them.
func (r *Runtime) WaitQuiet() {
	// Only between calls: a call that ended meanwhile could Add to
	// making during the Wait. Not under the pool's lock, which each maker
	// takes as it finishes.
	r.ahead.making.Wait()
	r.waitRemovals()
}

// MakeAhead says whether calls from now on have their next container made
// ahead (ahead.go); it is on unless a test turns it off.
func (r *Runtime) MakeAhead(on bool) { r.aheadOff.Store(!on) }
