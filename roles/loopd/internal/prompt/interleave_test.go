package prompt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"boxmaker/wire"
)

// Moves to other slots, withdrawals, hashes and parts handed out, in any
// order a session can make them: the request is always, byte for byte and
// hash for hash and at every length, the one built afresh from the same
// records for the slot it names now, and no body handed out earlier ever
// changes. (A refusal follows only a user message or a tool result, as
// the loader requires.)
func TestMovesAndWithdrawalsInterleaved(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		slot := uint32(rng.IntN(12))
		r := New(slot, prefix)
		recs := []wire.LogRecord{wire.SessionStart{Slot: slot}}
		r.Append(recs[0])
		type handed struct{ parts, copy []byte }
		var out []handed
		for step := 0; step < 40; step++ {
			last := recs[len(recs)-1]
			var rec wire.LogRecord
			switch k := rng.IntN(9); {
			case k == 0:
				slot = uint32(rng.IntN(12))
				r.SetSlot(slot)
			case k == 1:
				r.Hash()
			case k == 2:
				p := bytes.Join(r.Parts(), nil)
				out = append(out, handed{r.Parts()[0], append([]byte(nil), r.Parts()[0]...)})
				if !bytes.Equal(p[:len(p)-2], r.Body()[:len(p)-2]) {
					t.Fatalf("seed %d: parts differ from the body", seed)
				}
			case k == 3:
				r.Checked()
			case k == 4 && isWithdrawable(last):
				rec = wire.RefusedRecord{PromptTokens: 9, NCtx: 8}
			case k == 5:
				rec = wire.AssistantRecord{Content: str(fmt.Sprint("answer ", step)),
					ToolCalls: []wire.ToolCall{{ID: fmt.Sprint("c", step), Name: "clock", Arguments: `{"a":1}`}}}
			case k == 6:
				rec = wire.AnswerCut{Tokens: 3, Reason: wire.CutAnswerLimit}
			case k == 7:
				rec = wire.ToolResultRecord{Call: wire.CallID(step + 1), ToolCallID: fmt.Sprint("c", step), Content: fmt.Sprint("result ", step)}
			default:
				rec = wire.UserRecord{Content: fmt.Sprint("message ", step)}
			}
			if rec != nil {
				recs = append(recs, rec)
				r.Append(rec)
			}
			fresh := New(slot, prefix)
			for _, rec := range recs {
				fresh.Append(rec)
			}
			if r.Slot() != slot || r.Len() != fresh.Len() || !bytes.Equal(r.Body(), fresh.Body()) ||
				r.Hash() != fresh.Hash() || r.Size() != len(fresh.Body()) {
				t.Fatalf("seed %d step %d: the request differs from a fresh one\n%s\n%s", seed, step, r.Body(), fresh.Body())
			}
			for n := 0; n <= len(recs); n++ {
				if !bytes.Equal(r.BodyAt(n), fresh.BodyAt(n)) {
					t.Fatalf("seed %d step %d: BodyAt(%d) differs", seed, step, n)
				}
			}
			for i, h := range out {
				if !bytes.Equal(h.parts, h.copy) {
					t.Fatalf("seed %d step %d: parts handed out at %d changed", seed, step, i)
				}
			}
		}
	}
}

func isWithdrawable(rec wire.LogRecord) bool {
	switch rec.(type) {
	case wire.UserRecord, wire.ToolResultRecord:
		return true
	}
	return false
}
