package wire_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"boxmaker/wire"
)

func TestSessionID(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"chat-1", true},
		{"a", true},
		{strings.Repeat("a", 64), true},
		{"0-9-z", true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"Chat", false},
		{"chat_1", false},
		{"chat.1", false},
		{"../x", false},
		{"a/b", false},
		{"é", false},
	} {
		id, err := wire.NewSessionID(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("NewSessionID(%q): err %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok && id.String() != tc.in {
			t.Errorf("NewSessionID(%q).String() = %q", tc.in, id.String())
		}
		if !tc.ok && !errors.Is(err, wire.ErrInvalidValue) {
			t.Errorf("NewSessionID(%q): error %v is not ErrInvalidValue", tc.in, err)
		}
	}
	if _, err := wire.Marshal(wire.SessionID{}); err == nil {
		t.Error("the zero SessionID encoded; it must be refused")
	}
}

func TestTimestamp(t *testing.T) {
	ts, err := wire.ParseTimestamp("2026-09-17T08:05:00.000Z")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 9, 17, 8, 5, 0, 0, time.UTC).UnixMilli()
	if uint64(ts) != uint64(want) {
		t.Fatalf("got %d ms, want %d", uint64(ts), want)
	}
	if got, _ := wire.Marshal(ts); string(got) != `"2026-09-17T08:05:00.000Z"` {
		t.Fatalf("Marshal = %s", got)
	}
	if got := wire.Timestamp(1758096300123).String(); got != "2025-09-17T08:05:00.123Z" {
		t.Fatalf("String = %s", got)
	}
	for _, bad := range []string{
		"2026-09-17T08:05:00Z",      // no milliseconds
		"2026-09-17T08:05:00.00Z",   // two digits
		"2026-09-17T08:05:00.0000Z", // four digits
		"2026-09-17 08:05:00.000Z",  // space
		"2026-09-17T08:05:00.000+00:00",
		"2026-09-17t08:05:00.000z", // lowercase
		"2026-02-30T08:05:00.000Z", // no such day
		"2026-13-01T08:05:00.000Z", // no such month
		"2026-09-17T24:00:00.000Z", // no such hour
		"1969-12-31T23:59:59.999Z", // before the epoch
		"+2026-09-17T08:05:00.000Z",
		"",
	} {
		if _, err := wire.ParseTimestamp(bad); !errors.Is(err, wire.ErrInvalidValue) {
			t.Errorf("ParseTimestamp(%q): err %v, want ErrInvalidValue", bad, err)
		}
	}
	if _, err := wire.Marshal(wire.Timestamp(1 << 62)); err == nil {
		t.Error("a timestamp after year 9999 encoded")
	}
	max, err := wire.ParseTimestamp("9999-12-31T23:59:59.999Z")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := wire.Marshal(max); err != nil || string(b) != `"9999-12-31T23:59:59.999Z"` {
		t.Fatalf("max timestamp: %s %v", b, err)
	}
}

func TestHash32(t *testing.T) {
	h := wire.Sha256([]byte("abc"))
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if h.String() != want {
		t.Fatalf("Sha256(abc) = %s", h)
	}
	back, err := wire.ParseHash32(want)
	if err != nil || back != h {
		t.Fatalf("ParseHash32: %v %v", back, err)
	}
	for _, bad := range []string{strings.ToUpper(want), want[:63], want + "0", strings.Replace(want, "b", "g", 1), ""} {
		if _, err := wire.ParseHash32(bad); !errors.Is(err, wire.ErrInvalidValue) {
			t.Errorf("ParseHash32(%q): %v", bad, err)
		}
	}
}

func TestDataClassOrder(t *testing.T) {
	if !(wire.Public < wire.Private && wire.Private < wire.Secret) {
		t.Fatal("DataClass must order public < private < secret")
	}
	var zero wire.DataClass
	if zero.Valid() {
		t.Fatal("the zero DataClass must not be valid")
	}
	if _, err := wire.Marshal(zero); err == nil {
		t.Fatal("the zero DataClass encoded")
	}
}

func TestMarshalRefusesNilUnions(t *testing.T) {
	sid, _ := wire.NewSessionID("s")
	for name, v := range map[string]any{
		"record without event":      wire.AuditRecord{Seq: 1},
		"decision without outcome":  wire.AuditRecord{Event: wire.DecisionEvent{Session: sid, Taint: wire.Private}},
		"nil log record":            new(wire.LogRecord),
		"approve result no outcome": wire.ApproveResult{},
		"nil":                       nil,
	} {
		if b, err := wire.Marshal(v); err == nil {
			t.Errorf("%s: encoded as %s; want an error", name, b)
		}
	}
	if _, err := wire.MarshalEnvelope(wire.Reply(1, true, wire.ApproveResult{})); err == nil {
		t.Error("an envelope with a nil outcome encoded")
	}
	if _, err := wire.MarshalEnvelope(wire.Envelope{V: 1}); err == nil {
		t.Error("an envelope without a message encoded")
	}
}
