package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// SessionID names a session: 1 to 64 characters of [a-z0-9-]. It is used as a
// directory and file name, so the zero value is not valid and cannot be encoded.
type SessionID struct{ s string }

// ValidID reports whether s is 1 to 64 characters of [a-z0-9-]: the form of a
// session id and of a grant id (a grant file's stem).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// NewSessionID validates s.
func NewSessionID(s string) (SessionID, error) {
	if !ValidID(s) {
		return SessionID{}, fmt.Errorf("%w: session id %q is not 1 to 64 characters of [a-z0-9-]", ErrInvalidValue, s)
	}
	return SessionID{s}, nil
}

func (id SessionID) String() string { return id.s }

// IsZero reports whether id is the (invalid) zero value.
func (id SessionID) IsZero() bool { return id.s == "" }

func (id SessionID) MarshalText() ([]byte, error) {
	if !ValidID(id.s) {
		return nil, fmt.Errorf("%w: zero session id", ErrInvalidValue)
	}
	return []byte(id.s), nil
}

func (id *SessionID) UnmarshalText(b []byte) error {
	v, err := NewSessionID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Epoch numbers the log files of a session.
type Epoch uint32

// CallID is assigned by loopd, increasing within a session.
type CallID uint64

// Hash32 is a SHA-256 digest; in JSON, 64 lowercase hex characters.
type Hash32 [32]byte

// Sha256 hashes b.
func Sha256(b []byte) Hash32 { return Hash32(sha256.Sum256(b)) }

func (h Hash32) String() string { return hex.EncodeToString(h[:]) }

func (h Hash32) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

func (h *Hash32) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("%w: hash must be 64 lowercase hex characters, got %d bytes", ErrInvalidValue, len(b))
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%w: hash must be 64 lowercase hex characters", ErrInvalidValue)
		}
	}
	_, err := hex.Decode(h[:], b)
	return err
}

// ParseHash32 parses 64 lowercase hex characters.
func ParseHash32(s string) (Hash32, error) {
	var h Hash32
	err := h.UnmarshalText([]byte(s))
	return h, err
}

// Timestamp is Unix milliseconds; in JSON exactly "2026-09-17T08:05:00.000Z".
// Years outside 1970 to 9999 cannot be written in that form and are invalid.
type Timestamp uint64

const timestampLayout = "2006-01-02T15:04:05.000Z"

// maxTimestamp is 9999-12-31T23:59:59.999Z.
const maxTimestamp Timestamp = 253402300799999

// TimestampOf converts t, truncating to the millisecond.
func TimestampOf(t time.Time) Timestamp { return Timestamp(t.UnixMilli()) }

// Now is the current time as a Timestamp.
func Now() Timestamp { return TimestampOf(time.Now()) }

// Time converts ts back to a time.Time in UTC.
func (ts Timestamp) Time() time.Time { return time.UnixMilli(int64(ts)).UTC() }

func (ts Timestamp) String() string { return ts.Time().Format(timestampLayout) }

func (ts Timestamp) MarshalText() ([]byte, error) {
	if ts > maxTimestamp {
		return nil, fmt.Errorf("%w: timestamp %d is after year 9999", ErrInvalidValue, uint64(ts))
	}
	return []byte(ts.String()), nil
}

func (ts *Timestamp) UnmarshalText(b []byte) error {
	v, err := ParseTimestamp(string(b))
	if err != nil {
		return err
	}
	*ts = v
	return nil
}

// ParseTimestamp accepts exactly the form "2026-09-17T08:05:00.000Z".
func ParseTimestamp(s string) (Timestamp, error) {
	bad := fmt.Errorf("%w: timestamp %q is not of the form 2026-09-17T08:05:00.000Z", ErrInvalidValue, s)
	if len(s) != len(timestampLayout) {
		return 0, bad
	}
	t, err := time.Parse(timestampLayout, s)
	// Re-formatting rejects anything time.Parse tolerates but we do not.
	if err != nil || t.Format(timestampLayout) != s || t.UnixMilli() < 0 {
		return 0, bad
	}
	return Timestamp(t.UnixMilli()), nil
}
