package route

import (
	"testing"
	"time"
)

// TestCostModelTPOTGuard: a long prompt that would go to the idlest replica
// goes elsewhere when its prefill would push a short answer this balancer
// streams there past the TPOT objective, and only then.
func TestCostModelTPOTGuard(t *testing.T) {
	long := prompt(1, 1, 0, 512) // 8,192 tokens, cached nowhere
	// Replica 0 is idle but for one answer of ours decoding; replica 1
	// queues 16,000 tokens of other work: the long prompt's estimate there
	// is more than twice replica 0's, past the rotation's margin.
	setup := func(answerTokens, seen int, firstAgo time.Duration) ([]Candidate, *Answer) {
		cs := cands(2)
		cs[1].Load.Exact, cs[1].Load.InFlight, cs[1].Load.Pending, cs[1].Load.PrefillTokens = true, 1, 1, 16000
		c := cs[0].Own
		c.InFlight.Add(1)
		a := c.Follow(answerTokens, 0)
		for i := range seen {
			a.Token(t0.Add(-firstAgo + time.Duration(i)*time.Millisecond))
		}
		return cs, a
	}
	policy := func(slo SLOConfig) Policy {
		return newPolicy(t, PolicyCostModel, func(c *Config) { c.SLO, c.LoadFactor = slo, 100 })
	}
	guard := SLOConfig{TPOT: 100 * time.Millisecond}
	cases := []struct {
		name           string
		slo            SLOConfig
		out, seen      int
		firstAgo       time.Duration
		want           int
		wantGuardMoved bool
	}{
		{"no objective", SLOConfig{}, 3, 1, 10 * time.Millisecond, 0, false},
		// Two gaps left, 200 ms of budget: one step of 8,192 prefill
		// tokens (about 180 ms) on top of the two decode steps breaks it.
		{"a 3-token answer decoding", guard, 3, 1, 10 * time.Millisecond, 1, true},
		{"a 3-token answer still prefilling", guard, 3, 0, 0, 1, true},
		// 299 gaps: the prefill's steps are a rounding error of its TPOT.
		{"a 300-token answer", guard, 300, 1, 10 * time.Millisecond, 0, false},
		// Its last gap is under way: the queue is empty, the prefill takes
		// the next step, which is the answer's last gap.
		{"a 3-token answer on its last gap", guard, 3, 2, 10 * time.Millisecond, 1, true},
		// Late already (the first token 400 ms ago, one gap done): no
		// choice saves it, so it moves nothing.
		{"a 3-token answer already late", guard, 3, 1, 400 * time.Millisecond, 0, false},
		// Replica 1's estimate (about 0.6 s) is past the TTFT objective and
		// past replica 0's: the prompt stays.
		{"the other replica past the TTFT objective", SLOConfig{TTFT: 250 * time.Millisecond, TPOT: 100 * time.Millisecond}, 3, 1, 10 * time.Millisecond, 0, false},
		{"the other replica within the TTFT objective", SLOConfig{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}, 3, 1, 10 * time.Millisecond, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := setup(tc.out, tc.seen, tc.firstAgo)
			got, d := mustPick(t, policy(tc.slo), req(long), cs)
			if got != tc.want || (d.Reason == ReasonTPOTGuard) != tc.wantGuardMoved {
				t.Errorf("pick %d (%s), want %d (moved by the guard: %v); estimates %v", got, d.Reason, tc.want, tc.wantGuardMoved, d.TTFTs)
			}
		})
	}

	t.Run("a short prompt", func(t *testing.T) {
		// 256 uncached tokens add a few ms to one gap: no break, no move.
		cs, _ := setup(3, 1, 10*time.Millisecond)
		if got, d := mustPick(t, policy(guard), req(prompt(2, 2, 0, 16)), cs); got != 0 {
			t.Errorf("pick %d (%s), want the idle replica 0", got, d.Reason)
		}
	})
	t.Run("an answer the queue ahead outlasts", func(t *testing.T) {
		// Replica 1's answer has two gaps left and the 16,000 tokens queued
		// there take two steps: it ends before the prompt's prefill starts.
		cs, _ := setup(3, 1, 10*time.Millisecond)
		b := cs[1].Own.Follow(3, 0)
		b.Token(t0.Add(-10 * time.Millisecond))
		if got, d := mustPick(t, policy(guard), req(long), cs); got != 1 || d.Reason != ReasonTPOTGuard {
			t.Errorf("pick %d (%s), want replica 1, where the queue ahead outlasts the answer", got, d.Reason)
		}
	})
	t.Run("an ended answer", func(t *testing.T) {
		cs, a := setup(3, 1, 10*time.Millisecond)
		cs[0].Own.Unfollow(a)
		cs[0].Own.InFlight.Add(-1)
		if got, d := mustPick(t, policy(guard), req(long), cs); got != 0 {
			t.Errorf("pick %d (%s), want the idle replica 0 once the answer ended", got, d.Reason)
		}
	})
	t.Run("both replicas stream short answers", func(t *testing.T) {
		// Either choice breaks one (replica 1's answer is still
		// prefilling, so its gaps come after the queue there): the lower
		// estimate stands.
		cs, _ := setup(3, 1, 10*time.Millisecond)
		cs[1].Own.Follow(3, 0)
		if got, d := mustPick(t, policy(guard), req(long), cs); got != 0 || d.Reason == ReasonTPOTGuard {
			t.Errorf("pick %d (%s), want replica 0 by its estimate", got, d.Reason)
		}
	})
}

// TestTPOTGuardKeepsTheTurnAmongEquals: where every candidate breaks as many
// answers, the guard leaves the earlier rules' choice, here the rotation's
// turn over two cold replicas a few milliseconds apart, even when it is not
// the lowest score.
func TestTPOTGuardKeepsTheTurnAmongEquals(t *testing.T) {
	cs := cands(2)
	for i := range cs {
		cs[i].Own.Follow(3, 0) // an answer still prefilling on each
		cs[i].Own.InFlight.Add(1)
		cs[i].Own.Pending.Add(1)
	}
	cs[0].Load.Exact, cs[0].Load.InFlight, cs[0].Load.Pending, cs[0].Load.PrefillTokens = true, 1, 1, 300
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.SLO.TPOT = 100 * time.Millisecond })
	picked := map[int]bool{}
	for i := range 2 {
		got, d := mustPick(t, p, req(prompt(uint32(3+i), uint32(3+i), 0, 512)), cs) // cold, 8,192 tokens
		if d.Reason == ReasonTPOTGuard {
			t.Fatalf("pick %d moved by the guard, where both replicas break one answer", got)
		}
		picked[got] = true
	}
	if len(picked) != 2 {
		t.Errorf("two picks took %v, want the turn to take both replicas", picked)
	}
}

// TestFollowAnswers: what Follow, Token, Tokens and Unfollow leave for the guard.
func TestFollowAnswers(t *testing.T) {
	var c Counters
	if a := c.Follow(1, 0); a != nil {
		t.Fatalf("Follow(1) = %v, want nil: a one-token answer has no gap", a)
	}
	var none *Answer
	none.Token(t0) // not followed: ignored
	c.Unfollow(nil)
	a, b := c.Follow(3, 0), c.Follow(40, 0)
	a.Token(t0)
	a.Token(t0.Add(time.Millisecond))
	b.Tokens(t0, 0) // no event: still prefilling
	var got []answerState
	c.eachAnswer(func(s answerState) { got = append(got, s) })
	if len(got) != 2 || got[0].out != 3 || got[0].tokens != 2 || !got[0].first.Equal(t0) || got[1] != (answerState{out: 40}) {
		t.Fatalf("answers %+v, want the 3-token one with 2 tokens from t0 and the 40-token one prefilling", got)
	}
	// Several events in one read count each; the first of them is the
	// first token.
	b.Tokens(t0.Add(time.Second), 3)
	b.Tokens(t0.Add(2*time.Second), 2)
	got = got[:0]
	c.eachAnswer(func(s answerState) { got = append(got, s) })
	if got[1].tokens != 5 || !got[1].first.Equal(t0.Add(time.Second)) {
		t.Fatalf("the 40-token answer after 3 then 2 events: %+v, want 5 tokens from t0+1s", got[1])
	}
	c.Unfollow(a)
	c.Unfollow(a) // twice: nothing
	got = got[:0]
	c.eachAnswer(func(s answerState) { got = append(got, s) })
	if len(got) != 1 || got[0].out != 40 {
		t.Fatalf("after Unfollow: %+v, want only the 40-token answer", got)
	}
	c.Unfollow(b)
	n := 0
	c.eachAnswer(func(answerState) { n++ })
	if n != 0 {
		t.Fatalf("%d answers after both ended, want 0", n)
	}
}

// A followed answer ends within what its max_tokens leaves, never less
// than nothing; an answer counting no reserve is not one the memory model
// reads. Ended answers count as running to their bound or not, after their
// first token only.
func TestAnswerEnds(t *testing.T) {
	var c Counters
	a := c.Follow(100, 80) // a reserve of min(max_tokens 100, E 80)
	c.Follow(50, 0)
	for _, st := range []struct{ events, bound int64 }{{0, 100}, {1, 99}, {30, 70}, {99, 1}, {110, 0}} {
		a.Tokens(t0, int(st.events-a.tokens.Load()))
		want := answerEnd{bound: float64(st.bound), reserve: 80}
		if got, ran := c.appendEnds(nil); len(got) != 1 || got[0] != want || ran != 0.5 {
			t.Errorf("after %d events: appendEnds %v, %v; want [%v], 0.5 (none ended)", st.events, got, ran, want)
		}
	}
	c.Unfollow(a) // ran to its bound
	early := c.Follow(50, 50)
	early.Tokens(t0, 20)
	c.Unfollow(early)
	c.Unfollow(c.Follow(50, 50)) // never began
	if got, ran := c.appendEnds(nil); len(got) != 0 || ran != 0.5 {
		t.Errorf("after the ends: appendEnds %v, %v; want none, (1+1)/(2+2)", got, ran)
	}
	a = c.Follow(100, 80)
	a.Tokens(t0, 100)
	c.Unfollow(a)
	if _, ran := c.appendEnds(nil); ran != 3.0/5 {
		t.Errorf("two of three ran to their bound: share %v, want (2+1)/(3+2)", ran)
	}
}
