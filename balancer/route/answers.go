package route

import (
	"cmp"
	"math"
	"slices"
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

// A PeerAnswer is one of another balancer's followed answers on a replica,
// as that balancer's load message carried it (docs/routing.md, "Answers
// shared between balancers"). Each balancer follows only the streams it
// proxies: with four balancers, each saw a quarter of a replica's answers
// and took the rest to be average, so the others send theirs.
type PeerAnswer struct {
	// Left is what the answer's max_tokens left when the message was
	// written: its request ends within that many steps.
	Left int
	// Started reports whether its first token had been seen then.
	Started bool
	// Reserve is the output reserve, in tokens, its lease counted (> 0).
	Reserve int
	// At is when the message arrived.
	At time.Time
}

// PeerAnswers gives the other balancers' followed answers on a replica
// (Load.PeerAnswers): those of the balancers heard from within the gossip's
// load_max_age.
type PeerAnswers interface {
	// AppendPeerAnswers appends them to dst and returns the extended slice.
	AppendPeerAnswers(dst []PeerAnswer, now time.Time) []PeerAnswer
}

// Answers returns the followed answers that count an output reserve, those
// the wait for KV memory counts.
func (c *Counters) Answers() int {
	c.answers.mu.Lock()
	defer c.answers.mu.Unlock()
	n := 0
	for _, a := range c.answers.list {
		if a.reserve > 0 {
			n++
		}
	}
	return n
}

// AnswersOf returns the followed answers on c that the wait for KV memory
// counts at now: this balancer's own and, where other balancers send
// theirs (Load.HasPeers), those they sent. The decision log shows it.
func AnswersOf(c *Candidate, now time.Time) int {
	n := 0
	if c.Own != nil {
		n = c.Own.Answers()
	}
	if pa := c.Load.PeerAnswers; pa != nil && c.Load.HasPeers {
		for _, a := range pa.AppendPeerAnswers(nil, now) {
			if a.Reserve > 0 {
				n++
			}
		}
	}
	return n
}

// AppendAnswers appends to dst this balancer's followed answers that count
// an output reserve, as another balancer receives them (PeerAnswer, At
// unset): at most limit, those whose max_tokens leaves the least first.
func (c *Counters) AppendAnswers(dst []PeerAnswer, limit int) []PeerAnswer {
	start := len(dst)
	c.answers.mu.Lock()
	for _, a := range c.answers.list {
		if a.reserve <= 0 {
			continue
		}
		n := int(a.tokens.Load())
		dst = append(dst, PeerAnswer{Left: max(a.out-n, 0), Started: n > 0, Reserve: a.reserve})
	}
	c.answers.mu.Unlock()
	own := dst[start:]
	slices.SortFunc(own, func(a, b PeerAnswer) int { return cmp.Compare(a.Left, b.Left) })
	if len(own) > limit {
		dst = dst[:start+max(limit, 0)]
	}
	return dst
}

// appendPeerEnds appends to dst the peers' answers as the memory model reads
// them at now (answerEnd): a started answer's bound is lowered by the steps
// of step ns each since its message arrived, for a balancer sends no message
// for a single token; an answer without a reserve frees nothing the
// shortfall counts and is skipped.
func appendPeerEnds(dst []answerEnd, peers []PeerAnswer, now time.Time, step float64) []answerEnd {
	for _, a := range peers {
		if a.Reserve <= 0 {
			continue
		}
		bound := float64(a.Left)
		if a.Started && step > 0 {
			bound -= float64(max(now.Sub(a.At), 0)) / step
		}
		dst = append(dst, answerEnd{bound: max(math.Floor(bound), 0), reserve: float64(a.Reserve)})
	}
	return dst
}
