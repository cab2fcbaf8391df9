package route

import (
	"errors"
	"testing"
	"time"
)

// ShedDelay bounds the delay the work already on a replica adds to a
// request's first token: a prompt whose warm replica queues longer than
// that goes to the least delayed candidate instead, a request every
// candidate would delay that long is refused with ErrOverloaded (a Decision
// with reason shed and every candidate's estimates, no pick), and the
// bound is absolute: a fleet whose measured TTFTs run at twice the estimate
// sheds at half the queue.
func TestCostModelShedDelay(t *testing.T) {
	hs := prompt(12, 12, 256, 256) // 4,096 tokens, all warm on replica 0
	e := newEstimator(DefaultCostConfig())
	perSecond := float64(time.Second) / e.nsPerTok // queued tokens a second of queue holds
	setup := func(queued ...float64) []Candidate {
		cs := cands(len(queued))
		cs[0].Prefix = fakeIndex{}.add(hs)
		for k, q := range queued {
			cs[k].Load.Exact, cs[k].Load.InFlight, cs[k].Load.Pending, cs[k].Load.PrefillTokens = true, 2, 2, int64(q)
		}
		return cs
	}
	policy := func(shed time.Duration) Policy {
		return newPolicy(t, PolicyCostModel, func(c *Config) {
			c.ShedDelay, c.Cost.HotPrefixQueueWait, c.LoadFactor, c.Cost.MissPenalty = shed, 0, 100, 100
		})
	}
	// Replica 0 holds the prompt behind 3 s of queue; the penalty keeps it
	// there without a shed delay.
	if got, _ := mustPick(t, policy(0), req(hs), setup(3*perSecond, 0.5*perSecond)); got != 0 {
		t.Fatalf("no shed delay: pick %d, want the warm replica 0", got)
	}
	got, d := mustPick(t, policy(time.Second), req(hs), setup(3*perSecond, 0.5*perSecond))
	if got != 1 || d.Reason != ReasonLoadSpill {
		t.Errorf("shed delay 1s: pick %d %q, want replica 1, whose queue is shorter than 1s", got, d.Reason)
	}
	idx, d, err := policy(time.Second).Pick(req(hs), setup(3*perSecond, 2*perSecond), &Scratch{})
	if !errors.Is(err, ErrOverloaded) || idx != -1 || d.Reason != ReasonShed {
		t.Fatalf("both queues past 1s: Pick = %d, %q, %v; want -1, shed, ErrOverloaded", idx, d.Reason, err)
	}
	if d.TTFTs[0] < 2*time.Second || d.TTFTs[1] < 2*time.Second || d.Eligible != 2 {
		t.Errorf("a shed decision's estimates %v over %d eligible, want both past 2s over 2", d.TTFTs, d.Eligible)
	}
	// The wait it is told: the shorter queue's delay (2 s of queued tokens,
	// and their attention and step overheads) past the 1 s bound.
	if d.RetryAfter < time.Second || d.RetryAfter > 1500*time.Millisecond {
		t.Errorf("a shed decision's retry after %v, want the 2 s queue's delay past 1 s (1 to 1.5 s)", d.RetryAfter)
	}
	slow := setup(0.7*perSecond, 0.7*perSecond)
	if _, d, err := policy(time.Second).Pick(req(hs), slow, &Scratch{}); err != nil || d.RetryAfter != 0 {
		t.Fatalf("0.7s of queue, no correction: %v, retry after %v; want a pick and no wait", err, d.RetryAfter)
	}
	for k := range slow {
		slow[k].TTFTScale = 2 // measured TTFTs twice the estimates
	}
	if _, d, err := policy(time.Second).Pick(req(hs), slow, &Scratch{}); !errors.Is(err, ErrOverloaded) || d.RetryAfter < 300*time.Millisecond || d.RetryAfter > 800*time.Millisecond {
		t.Errorf("0.7s of queue measured at twice the estimate: err %v, retry after %v; want ErrOverloaded and the corrected delay past 1 s (0.3 to 0.8 s)", err, d.RetryAfter)
	}
}
