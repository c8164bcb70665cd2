package audit

// Head returns the log's head as of the last commit: the seq the next
// record takes (0 while the log has none) and the hash of the last record,
// which is on disk (synced). brokerd sends it to gatewayd (issue 14), so
// that a copy of it is kept off the host. A record being committed while
// Head is called is not in it until its sync has returned.
func (w *Writer) Head() Head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// setLast records the seq and hash reached by the commit that just synced
// (or by startup) as what Head returns. Only the goroutine that owns the
// commit (busy, or startup before the committer runs) calls it.
func (w *Writer) setLast() {
	w.mu.Lock()
	w.last = Head{Next: w.seq, Hash: w.head}
	w.mu.Unlock()
}
