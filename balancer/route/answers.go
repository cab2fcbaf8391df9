package route

import (
	"sync"
	"sync/atomic"
	"time"
)

// An Answer is one of this balancer's streams on a replica, followed for the
// TPOT guard (SLOConfig.TPOT): its bound on output tokens and the
// token-bearing events seen so far. Counters.Follow makes one, Token records
// each event and Counters.Unfollow ends it. Its methods are safe for
// concurrent use.
type Answer struct {
	out    int          // the request's max_tokens
	first  atomic.Int64 // its first token, Unix ns (0: still prefilling)
	tokens atomic.Int64 // the token-bearing events seen
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
}

// Follow starts following a stream sent to the replica whose output is
// bounded by maxTokens (its max_tokens or max_completion_tokens). It
// returns nil for an answer of fewer than two tokens, which has no gap
// between tokens to protect.
func (c *Counters) Follow(maxTokens int) *Answer {
	if maxTokens < 2 {
		return nil
	}
	a := &Answer{out: maxTokens}
	c.answers.mu.Lock()
	c.answers.list = append(c.answers.list, a)
	c.answers.mu.Unlock()
	return a
}

// Unfollow stops following a (nil: nothing), when its stream ends.
func (c *Counters) Unfollow(a *Answer) {
	if a == nil {
		return
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
