// Package audit writes and verifies boxmaker's hash-chained audit log
// (M3a §5).
//
// The log is a directory of files named YYYY-MM-DD.jsonl (the UTC date of the
// records' time), each line one wire.AuditRecord in canonical JSON. A line's
// hash is the SHA-256 of its bytes without the newline; every record's prev
// is the hash of the line before it, and seq rises by one across files. Edits,
// deletions, reorderings and gaps therefore show up as a broken chain.
//
// Writer is the only writer (brokerd): Open takes the lock, checks the end of
// the log and repairs a torn final line, and Append returns only once the
// record is synced (fdatasync: its bytes and the file size are durable).
// ChainVerifier is the pure state machine that decides what a sequence of
// lines means; VerifyDir feeds it a whole directory, for `bxctl audit
// verify`.
//
// This package imports nothing of boxmaker's but wire, so its runbook
// references are written out literally ("see docs/runbook.md#...").
package audit
