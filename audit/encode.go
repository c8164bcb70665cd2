package audit

import (
	"encoding/hex"
	"strconv"

	"boxmaker/wire"
)

// appendLine appends the line for AuditRecord{seq, ts, prev, ev} given ev's
// encoding by wire.Marshal. It is byte for byte what wire.Marshal writes for
// the whole record (a test holds it to that); splicing lets callers encode
// their events in parallel while the committer adds only the header.
func appendLine(dst []byte, seq uint64, ts wire.Timestamp, prev wire.Hash32, ev []byte) ([]byte, error) {
	t, err := ts.MarshalText()
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = append(dst, t...)
	dst = append(dst, `","prev":"`...)
	dst = hex.AppendEncode(dst, prev[:])
	dst = append(dst, `","event":`...)
	dst = append(dst, ev...)
	return append(dst, '}'), nil
}
