package stages

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMarksAreStagesInOrder(t *testing.T) {
	Mark(context.Background(), "nothing") // no clock: no effect, no panic
	c := Start()
	ctx := With(context.Background(), c)
	time.Sleep(20 * time.Millisecond)
	Mark(ctx, "a")
	Mark(ctx, "b")
	time.Sleep(10 * time.Millisecond)
	Mark(ctx, "c")
	s := c.Spans()
	if len(s) != 3 || s[0].Stage != "a" || s[1].Stage != "b" || s[2].Stage != "c" {
		t.Fatalf("%v", s)
	}
	if s[0].Took < 20*time.Millisecond || s[1].Took > s[0].Took || s[2].Took < 10*time.Millisecond {
		t.Errorf("%v", s)
	}
	var sum time.Duration
	for _, x := range s {
		sum += x.Took
	}
	if whole := time.Since(c.start); sum > whole {
		t.Errorf("the stages add up to %s, more than the %s since the start", sum, whole)
	}
}

func TestTable(t *testing.T) {
	ms := time.Millisecond
	runs := [][]Span{
		{{"x", 1 * ms}, {"y", 3 * ms}},
		{{"x", 3 * ms}, {"y", 1 * ms}, {"z", 4 * ms}},
		{{"x", 2 * ms}, {"y", 2 * ms}},
	}
	want := "stage         p50 ms   mean ms  share\n" +
		"x               2.00      2.00  37.5%\n" +
		"y               2.00      2.00  37.5%\n" +
		"z               0.00      1.33  25.0%\n" +
		"call                      5.33 100.0%\n"
	// z, marked by one call only, counts as 0 in the others.
	if got := Table(runs); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Table(nil); !strings.Contains(got, "no calls") {
		t.Errorf("%q", got)
	}
}
