package route

import (
	"sync"
	"sync/atomic"
	"time"
)

// An Answer is one of this balancer's streams on a replica, followed for the
// TPOT guard (SLOConfig.TPOT) and the memory model: its bound on output
// tokens and the token-bearing events seen so far. Counters.Follow makes
// one, Token records each event and Counters.Unfollow ends it. Its methods
// are safe for concurrent use.
//
// A stream that has written g of its max_tokens m writes at most m-g more:
// its request ends within that many steps, and frees its memory then
// (Counters.appendEnds, releaseSteps); how often answers run to their bound
// is counted as they end (Counters.Unfollow). On W2 at round robin's capacity,
// where every replica's memory was full and admissions waited for answers
// to end, the replica whose answers would free the least in the next half
// second (5,000 tokens against up to 12,000 elsewhere) took the slowest
// requests (docs/routing-findings.md).
type Answer struct {
	out     int          // the request's max_tokens
	reserve int          // the output reserve its lease counted (CostConfig.OutputReserve)
	first   atomic.Int64 // its first token, Unix ns (0: still prefilling)
	tokens  atomic.Int64 // the token-bearing events seen
}

// Token records a token-bearing event of the stream seen at at (the first
// is its first token). vLLM and SGLang send one token an event unless they
// decode speculatively; several tokens in one event count as one, which
// makes the answer look longer than it is and the guard more lenient. A nil
// Answer (not followed) ignores it.
func (a *Answer) Token(at time.Time) { a.Tokens(at, 1) }

// Tokens records n events of the stream seen at at, as Token does one
// (the stream's last events, its usage and its end, count too: by then it
// has no gap left to protect).
func (a *Answer) Tokens(at time.Time, n int) {
	if a == nil || n <= 0 {
		return
	}
	if a.tokens.Add(int64(n)) == int64(n) {
		a.first.Store(at.UnixNano())
	}
}

// answers is a replica's followed answers (Counters.Follow).
type answers struct {
	mu   sync.Mutex
	list []*Answer
	// ran counts the ended answers that ran to their max_tokens (the
	// first kind) and those that ended before it.
	ran tally
}

// Follow starts following a stream sent to the replica whose output is
// bounded by maxTokens (its max_tokens or max_completion_tokens) and whose
// lease counted reserve in OutputReserve (0: none). It returns nil for an
// answer of fewer than two tokens, which has no gap between tokens to
// protect and a reserve of at most one token.
func (c *Counters) Follow(maxTokens, reserve int) *Answer {
	if maxTokens < 2 {
		return nil
	}
	a := &Answer{out: maxTokens, reserve: max(reserve, 0)}
	c.answers.mu.Lock()
	c.answers.list = append(c.answers.list, a)
	c.answers.mu.Unlock()
	return a
}

// Unfollow stops following a (nil: nothing), when its stream ends, and
// counts whether it ran to its max_tokens (an answer that never began, a
// failed attempt's, is not counted). A stream's last events (its usage,
// its end) count as events, so one that stopped a token or two short of
// its bound counts as running to it.
func (c *Counters) Unfollow(a *Answer) {
	if a == nil {
		return
	}
	if n := a.tokens.Load(); n > 0 {
		c.answers.ran.add(n >= int64(a.out))
	}
	c.answers.mu.Lock()
	defer c.answers.mu.Unlock()
	l := c.answers.list
	for i, x := range l {
		if x == a {
			l[i] = l[len(l)-1]
			l[len(l)-1] = nil
			c.answers.list = l[:len(l)-1]
			return
		}
	}
}

// answerState is an Answer as the guard reads it at one instant.
type answerState struct {
	out, tokens int
	first       time.Time // zero: still prefilling
}

// eachAnswer calls f for each followed answer, under the list's lock: f
// must not block.
func (c *Counters) eachAnswer(f func(answerState)) {
	c.answers.mu.Lock()
	defer c.answers.mu.Unlock()
	for _, a := range c.answers.list {
		st := answerState{out: a.out, tokens: int(a.tokens.Load())}
		if ns := a.first.Load(); ns != 0 && st.tokens > 0 {
			st.first = time.Unix(0, ns)
		}
		f(st)
	}
}

// An answerEnd is a followed answer as the memory model reads it
// (releaseSteps): its request ends within bound steps (what its max_tokens
// leaves) and frees its blocks and reserve, the output reserve its lease
// counted, then.
type answerEnd struct{ bound, reserve float64 }

// appendEnds appends to dst each followed answer that counts an output
// reserve, and returns the extended slice and the share of the replica's
// ended answers that ran to their max_tokens: as the counts show it, with
// one of each kind assumed (a half before any has ended).
func (c *Counters) appendEnds(dst []answerEnd) ([]answerEnd, float64) {
	ran, early := c.answers.ran.counts()
	c.answers.mu.Lock()
	defer c.answers.mu.Unlock()
	for _, a := range c.answers.list {
		if a.reserve <= 0 {
			continue
		}
		bound := max(a.out-int(a.tokens.Load()), 0)
		dst = append(dst, answerEnd{bound: float64(bound), reserve: float64(a.reserve)})
	}
	return dst, (ran + 1) / (ran + early + 2)
}
