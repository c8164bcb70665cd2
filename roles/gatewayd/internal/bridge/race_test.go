package bridge

import (
	"net"
	"sync"
	"testing"

	"boxmaker/roles/gatewayd/internal/mm"
	"boxmaker/wire"
)

// TestBrokerdRestartsWhileAnswersArrive: owners' answers are delivered
// while a broker_start of a new instance ends the old one's approvals.
// Under -race this shows the table read only under its lock. (brokerd's
// restart read whether an answer was held outside it.)
func TestBrokerdRestartsWhileAnswersArrive(t *testing.T) {
	w := newWorld(t, nil)
	brokers := []string{brokerA, brokerB}
	id := uint64(1000)
	for round := range 60 {
		old, next := brokers[round%2], brokers[(round+1)%2]
		var conns []net.Conn
		var posts []string
		for range 4 {
			id++
			req := w.request(id)
			req.Broker = old
			c, p := w.ask(req)
			conns, posts = append(conns, c), append(posts, p)
		}
		var wg sync.WaitGroup
		for _, p := range posts {
			wg.Go(func() {
				w.event(mm.ReactionAdded{Reaction: mm.Reaction{UserID: w.owner.ID, PostID: p, EmojiName: "+1", CreateAt: w.now()}})
			})
		}
		wg.Go(func() {
			if m := w.call(wire.BrokerStart{Broker: next}); m != (wire.OK{}) {
				t.Errorf("broker_start: %#v", m)
			}
		})
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}
}
