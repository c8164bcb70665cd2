package jobstest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	c := NewClock(t0)
	a, b, stopped := c.NewTimer(2*time.Minute), c.NewTimer(time.Minute), c.NewTimer(time.Minute)
	now := c.NewTimer(0)
	select {
	case at := <-now.C():
		if !at.Equal(t0) {
			t.Errorf("a zero timer fired at %s", at)
		}
	default:
		t.Error("a zero timer did not fire at once")
	}
	if !stopped.Stop() || stopped.Stop() || now.Stop() {
		t.Error("Stop's results")
	}
	c.Advance(59 * time.Second)
	if len(a.C())+len(b.C()) != 0 {
		t.Error("a timer fired early")
	}
	c.Advance(time.Second)
	if at := <-b.C(); !at.Equal(t0.Add(time.Minute)) || len(a.C()) != 0 || len(stopped.C()) != 0 {
		t.Errorf("b fired at %s", at)
	}
	c.Advance(time.Hour)
	if at := <-a.C(); !at.Equal(t0.Add(61*time.Minute)) || b.Stop() {
		t.Errorf("a fired at %s", at)
	}
	if made, pending := c.State(); made != 4 || pending != 0 {
		t.Errorf("state %d %d", made, pending)
	}
}
