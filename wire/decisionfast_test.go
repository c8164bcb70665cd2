package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// decisionFrom builds a DecisionEvent from fuzzed parts, valid or not.
func decisionFrom(session string, call uint64, tool, args string, outcome, reason uint8, grant string, hasGrant bool, sha []byte, taint uint8, untrusted bool) DecisionEvent {
	ev := DecisionEvent{Session: SessionID{session}, Call: CallID(call), Tool: tool, Arguments: args,
		Taint: DataClass(taint), Untrusted: untrusted}
	switch outcome % 5 {
	case 0:
		ev.Outcome = OutcomeAllowed{}
	case 1:
		ev.Outcome = OutcomeAsk{}
	case 2:
		ev.Outcome = OutcomeDenied{Reason: DenyReason(reason)}
	case 3:
		ev.Outcome = &OutcomeDenied{Reason: DenyReason(reason)}
	}
	if hasGrant {
		ev.Grant = &grant
	}
	if len(sha) >= 32 {
		var h Hash32
		copy(h[:], sha)
		ev.GrantSha256 = &h
	}
	return ev
}

// sameAsReflect checks appendDecision against the json path: where it
// writes, the bytes are the json path's; where it declines, Marshal still
// gives the json path's answer.
func sameAsReflect(t *testing.T, ev DecisionEvent) {
	t.Helper()
	want, wantErr := marshalReflect(ev)
	if got, ok := appendDecision(nil, ev); ok {
		if wantErr != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\nfast %s\njson %s (%v)", ev, got, want, wantErr)
		}
	}
	got, err := Marshal(ev)
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("%+v: Marshal %s (%v), json %s (%v)", ev, got, err, want, wantErr)
	}
}

// TestDecisionFastPath: random events, valid and not, through both paths;
// and the paths must agree on enough valid ones to matter.
func TestDecisionFastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	strs := []string{"", "read_file", `{"path":"/a"}`, "\"quoted\"\\", "\x00\x1f\x7f", "<&>", "\u2028\u2029", "é ☃ 🙂", "\xff"}
	sessions := []string{"chat-1", "", "Bad", "a-b-0", string(make([]byte, 65))}
	fast := 0
	for range 20000 {
		sha := make([]byte, 32*rng.IntN(2))
		for i := range sha {
			sha[i] = byte(rng.Uint32())
		}
		ev := decisionFrom(sessions[rng.IntN(len(sessions))], rng.Uint64()>>rng.IntN(64), strs[rng.IntN(len(strs))],
			strs[rng.IntN(len(strs))], uint8(rng.IntN(5)), uint8(rng.IntN(16)), strs[rng.IntN(len(strs))],
			rng.IntN(2) == 0, sha, uint8(rng.IntN(5)), rng.IntN(2) == 0)
		if _, ok := appendDecision(nil, ev); ok {
			fast++
		}
		sameAsReflect(t, ev)
	}
	if fast < 1000 {
		t.Errorf("the fast path wrote only %d of 20000", fast)
	}
}

func FuzzDecisionFastPath(f *testing.F) {
	f.Add("chat-1", uint64(3), "read_file", `{"path":"/a"}`, uint8(2), uint8(3), "g", true, make([]byte, 32), uint8(2), false)
	f.Add("chat-1", uint64(0), "\x00", "\xff", uint8(3), uint8(0), "", false, []byte{}, uint8(0), true)
	f.Fuzz(func(t *testing.T, session string, call uint64, tool, args string, outcome, reason uint8, grant string, hasGrant bool, sha []byte, taint uint8, untrusted bool) {
		sameAsReflect(t, decisionFrom(session, call, tool, args, outcome, reason, grant, hasGrant, sha, taint, untrusted))
	})
}

// TestDeniedFastPath: every reason, and the invalid ones, as the json path
// writes or refuses them.
func TestDeniedFastPath(t *testing.T) {
	written := 0
	for r := range 32 {
		v := DeniedResponse{Reason: DenyReason(r)}
		want, wantErr := marshalReflect(v)
		if got, ok := appendDenied(nil, v); ok {
			written++
			if wantErr != nil || !bytes.Equal(got, want) {
				t.Errorf("reason %d: fast %s, json %s (%v)", r, got, want, wantErr)
			}
		}
		got, err := Marshal(v)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("reason %d: Marshal %s (%v), json %s (%v)", r, got, err, want, wantErr)
		}
	}
	if written != len(denyReasonNames.names)-1 {
		t.Errorf("the fast path wrote %d reasons, want %d", written, len(denyReasonNames.names)-1)
	}
}
