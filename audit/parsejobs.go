package audit

// The fast parser's part for issue 17's events: notes promoted or deleted
// by the owner, and scheduled jobs started, skipped and ended. The verifier
// gives them no meaning of its own (they chain like every record); they are
// parsed here so that a log full of them verifies at full speed, and so that
// parseFast keeps accepting exactly what wire accepts.

// parseJobEvent reads the members of an event of kind r.kind after its tag,
// or returns -1 for a kind it does not know.
func (d *parser) parseJobEvent(b []byte, i int, r *lineRec) int {
	x := r.x
	switch r.kind {
	case evNotePromoted:
		i = noteBy(b, i, x)
		i = lit(b, i, `,"taint":`)
		x.enum2, i = enum(b, i, classNames)
		i = lit(b, i, `,"untrusted":`)
		x.untrusted, i = boolean(b, i)
		return i
	case evNoteDeleted:
		return noteBy(b, i, x)
	case evJobStarted:
		i = jobField(b, i, x)
		i = sessionField(b, i, r)
		i = lit(b, i, `,"trigger":`)
		x.enum1, i = enum(b, i, triggerNames)
		i = d.dueField(b, i, x)
		i = lit(b, i, `,"job_sha256":`)
		return hashField(b, i, r, false)
	case evJobSkipped:
		i = jobField(b, i, x)
		i = d.dueField(b, i, x)
		i = lit(b, i, `,"reason":`)
		x.enum1, i = enum(b, i, skipNames)
		return i
	case evJobEnded:
		i = jobField(b, i, x)
		i = sessionField(b, i, r)
		i = lit(b, i, `,"status":`)
		x.enum1, i = enum(b, i, jobStatusNames)
		i = lit(b, i, `,"message":`)
		return strField(b, i, &x.strs[1], true)
	}
	return -1
}

// noteBy reads `,"note":"…","by":"…"` into strs[0] and strs[1].
func noteBy(b []byte, i int, x *lineExtra) int {
	i = lit(b, i, `,"note":`)
	i = strField(b, i, &x.strs[0], false)
	i = lit(b, i, `,"by":`)
	return strField(b, i, &x.strs[1], false)
}

// jobField reads `,"job":"…"` into strs[0].
func jobField(b []byte, i int, x *lineExtra) int {
	i = lit(b, i, `,"job":`)
	return strField(b, i, &x.strs[0], false)
}

// dueField reads `,"due":"<timestamp>"`.
func (d *parser) dueField(b []byte, i int, x *lineExtra) int {
	i = lit(b, i, `,"due":`)
	x.due, i = d.timestamp(b, i)
	return i
}
