package route

import (
	"testing"
	"time"
)

// The step clock through a replica's life: a first token ends an engine
// step, so what was sent before it is in the step that began then, and what
// is sent after it queues behind that step.
func TestCountersStepClock(t *testing.T) {
	var c Counters
	t0 := time.Unix(1000, 0)
	sent, check := stepClock(t, &c)
	a, b := sent(100), sent(200)
	check("two sent to an idle replica, no step end seen", 0, time.Time{})
	c.Prefilled(100, a, t0.Add(10*time.Millisecond))
	check("the first one's first token", 200, t0.Add(10*time.Millisecond))
	d := sent(400)
	check("sent during the step", 200, t0.Add(10*time.Millisecond))
	e := sent(800)
	c.Done(800, 0, e, false) // cancelled while queued
	check("a queued one cancelled", 200, t0.Add(10*time.Millisecond))
	c.Prefilled(200, b, t0.Add(30*time.Millisecond))
	check("the step's end", 400, t0.Add(30*time.Millisecond))
	f := sent(50)
	g, g2 := sent(70), sent(30)
	c.Prefilled(50, f, time.Time{}) // a non-streaming request's estimated end
	check("an estimated end is no step end", 400, t0.Add(30*time.Millisecond))
	c.Prefilled(400, d, t0.Add(60*time.Millisecond))
	check("the next step's end", 100, t0.Add(60*time.Millisecond))
	h := sent(10)
	c.Prefilled(70, g, t0.Add(80*time.Millisecond))
	check("the step of two", 40, t0.Add(80*time.Millisecond))
	// The other request of that step: its end is counted already.
	c.Prefilled(30, g2, t0.Add(81*time.Millisecond))
	check("a second first token of a counted step", 10, t0.Add(80*time.Millisecond))
	c.Prefilled(10, h, t0.Add(100*time.Millisecond))
	check("everything prefilled", 0, t0.Add(100*time.Millisecond))
	if n, p := c.PendingPrefillTokens.Load(), c.Pending.Load(); n != 0 || p != 0 {
		t.Errorf("after every request: %d pending prefill tokens, %d pending", n, p)
	}
}

// A stream's later tokens end engine steps too: a prefill sent while only
// decodes ran is in the step that began at the next of them, not queued
// until some first token (the Mooncake trace at 0.5×: an 8,000-token prefill
// 180 ms under way was charged in full).
func TestCountersStepEndedByLaterTokens(t *testing.T) {
	var c Counters
	t0 := time.Unix(1000, 0)
	sent, check := stepClock(t, &c)
	a := sent(7690)
	check("sent while decodes run, no step end seen", 0, time.Time{})
	c.StepEnded(t0.Add(10 * time.Millisecond))
	check("a decode token: the prefill is in the step that began then", 7690, t0.Add(10*time.Millisecond))
	b := sent(6000)
	check("sent during that step", 7690, t0.Add(10*time.Millisecond))
	c.Prefilled(7690, a, t0.Add(220*time.Millisecond))
	check("its first token ends the step", 6000, t0.Add(220*time.Millisecond))
	c.StepEnded(t0.Add(221 * time.Millisecond))
	check("a decode token of the same step", 6000, t0.Add(221*time.Millisecond))
	// b was sent two step ends ago: its first token is of a step whose
	// start is counted (the decode tokens of that step count its end).
	c.Prefilled(6000, b, t0.Add(400*time.Millisecond))
	check("everything prefilled", 0, t0.Add(221*time.Millisecond))
	if n, p := c.PendingPrefillTokens.Load(), c.Pending.Load(); n != 0 || p != 0 {
		t.Errorf("after every request: %d pending prefill tokens, %d pending", n, p)
	}
}

// stepClock returns a test's two moves on c's step clock: send a request
// of uncached tokens, and check what Step reports.
func stepClock(t *testing.T, c *Counters) (sent func(uncached int) Ticket, check func(step string, wantIn int64, wantEnd time.Time)) {
	sent = func(uncached int) Ticket {
		c.InFlight.Add(1)
		c.Pending.Add(1)
		return c.Sent(uncached)
	}
	check = func(step string, wantIn int64, wantEnd time.Time) {
		t.Helper()
		if in, end := c.Step(); in != wantIn || !end.Equal(wantEnd) {
			t.Errorf("%s: Step() = %d tokens since %v, want %d since %v", step, in, end, wantIn, wantEnd)
		}
	}
	return sent, check
}
