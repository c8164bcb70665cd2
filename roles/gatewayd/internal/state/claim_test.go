package state

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"boxmaker/wire"
)

// TestClaimIsOneStep: answers written at once for one approval: exactly
// one is written, the others are refused as second answers, and the file
// read again holds the one written. An ended approval takes none. Run
// under -race.
func TestClaimIsOneStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 20; id++ {
		post := "p" + string(rune('a'+id))
		if err := s.PutApproval(Approval{ID: id, Post: post, Channel: "c", Expires: 10_000}, 1000); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []wire.OwnerAnswer
		for i := range 8 {
			wg.Go(func() {
				a := wire.OwnerAnswer{Answer: wire.Approved, By: "u" + string(rune('a'+i)), Post: post}
				if i%2 == 1 {
					a.Answer = wire.Refused
				}
				err := s.Answer(id, a)
				switch {
				case err == nil:
					mu.Lock()
					won = append(won, a)
					mu.Unlock()
				case !errors.Is(err, ErrAnswered):
					t.Errorf("approval %d: %v; want ErrAnswered", id, err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("approval %d: %d answers written; want one", id, len(won))
		}
		again, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := again.Approval(id); a.Answer == nil || *a.Answer != won[0] {
			t.Fatalf("approval %d read again: %+v; want %+v", id, a.Answer, won[0])
		}
	}
	if err := s.Answer(99, wire.OwnerAnswer{Answer: wire.Approved, By: "u", Post: "pb"}); !errors.Is(err, ErrNoApproval) {
		t.Fatalf("an answer for no approval: %v", err)
	}
	if err := s.Answer(1, wire.OwnerAnswer{Answer: wire.Approved, By: "u", Post: "another"}); !errors.Is(err, ErrNoApproval) {
		t.Fatalf("an answer on another post: %v", err)
	}
	s.PutApproval(Approval{ID: 30, Post: "p30", Expires: 10_000}, 1000)
	if ok, err := s.EndApproval(30); !ok || err != nil {
		t.Fatalf("EndApproval: %v %v", ok, err)
	}
	if err := s.Answer(30, wire.OwnerAnswer{Answer: wire.Approved, By: "u", Post: "p30"}); !errors.Is(err, ErrEnded) {
		t.Fatalf("an answer after the end: %v", err)
	}
}

// TestAnswerNotWrittenIsNotKept: an answer whose write fails is not kept
// in memory either: the next write (of anything) does not make it count
// after a restart, and the next answer can be written.
func TestAnswerNotWrittenIsNotKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	s, _ := Open(path)
	s.PutApproval(Approval{ID: 1, Post: "p1", Expires: 10_000}, 1000)
	block := filepath.Join(path+".tmp", "x")
	os.MkdirAll(block, 0o700)
	if err := s.Answer(1, wire.OwnerAnswer{Answer: wire.Approved, By: "u", Post: "p1"}); err == nil {
		t.Fatal("an answer was written where no file can be")
	}
	os.RemoveAll(filepath.Dir(block))
	if err := s.StartCursor("c", 1000); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Approval(1); a.Answer != nil {
		t.Fatalf("the answer not written is kept: %+v", a.Answer)
	}
	again, _ := Open(path)
	if a, _ := again.Approval(1); a.Answer != nil {
		t.Fatalf("the answer not written is in the file: %+v", a.Answer)
	}
	refused := wire.OwnerAnswer{Answer: wire.Refused, By: "u", Post: "p1"}
	if err := s.Answer(1, refused); err != nil {
		t.Fatal(err)
	}
	again, _ = Open(path)
	if a, _ := again.Approval(1); a.Answer == nil || *a.Answer != refused {
		t.Fatalf("read again: %+v", a.Answer)
	}
}
