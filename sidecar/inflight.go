package sidecar

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// DataPathCounts are the exact counts the data path keeps of the work it has
// handed to the engine.
//
// A request's prefill is over at its first token, not at its response
// headers: engines send a stream's headers when they admit it, and a
// non-streaming response's headers only when the whole generation is done.
// So a stream counts as prefilling until its first token-bearing event, and
// a non-streaming request until the engine's metrics show it running (the
// engine admits requests in arrival order, so when it reports R running, the
// R oldest requests in flight are past their queue; see markRunning) or its
// response arrives, whichever is first. Its decode is never counted as
// queued prefill.
type DataPathCounts struct {
	// InFlight is the number of requests between arrival and the end of
	// their response body.
	InFlight int64 `json:"in_flight"`
	// Prefilling is the number of requests in flight whose prefill is not
	// over: queued or prefilling in the engine.
	Prefilling int64 `json:"prefilling"`
	// PromptTokens is the sum of the prompt tokens of the requests in
	// flight (exact when the prompt was tokenized, else estimated; see
	// docs/sidecar.md).
	PromptTokens int64 `json:"prompt_tokens"`
	// WaitingPromptTokens is the part of PromptTokens whose requests are
	// prefilling.
	WaitingPromptTokens int64 `json:"waiting_prompt_tokens"`
	// WaitingPrefillTokens is the part of WaitingPromptTokens the engine
	// has to compute: each prefilling prompt's tokens past the prefix the
	// sidecar's block set held when the request arrived (at least the last
	// token, which the engine always computes). Balancers read it as the
	// prefill work queued ahead of a new request.
	WaitingPrefillTokens int64 `json:"waiting_prefill_tokens"`
	// Origins breaks the counts down by the balancer that sent the requests
	// (the x-inferrail-balancer request header), largest first; requests
	// without the header are in the totals only.
	Origins []OriginCounts `json:"origins,omitempty"`
}

// OriginCounts is one balancer's share of the data path's counts.
type OriginCounts struct {
	Origin        string `json:"origin"`
	InFlight      int64  `json:"in_flight"`
	Prefilling    int64  `json:"prefilling"`
	PrefillTokens int64  `json:"prefill_tokens"`
}

// maxOrigins bounds the distinct origins the ledger tracks; requests from
// further origins are counted in the totals only.
const maxOrigins = 64

// ledger is the data path's requests in flight, in arrival order, and the
// counts derived from them. A short mutex section per request event; the
// counts are read at every response and every scrape.
type ledger struct {
	mu      sync.Mutex // protects the fields below
	next    uint64
	live    []*entry // in arrival order
	c       DataPathCounts
	origins map[string]*OriginCounts
	// kv is the running sum of the KV memory, in tokens, the data path saw
	// taken and freed outside the engine's scrapes (see kvTokens). It is
	// written under mu and read without it: every response's load report
	// reads it beside the counts.
	kv atomic.Int64
}

// entry is one request in flight.
type entry struct {
	id     uint64
	origin *OriginCounts // nil: not from a named balancer
	stream bool
	// tokens and prefill are the prompt tokens counted while prefilling,
	// and the uncached part of them.
	tokens, prefill int64
	prefilled, done bool
	// inKV reports whether e's prompt holds KV memory that is in the
	// engine's scraped usage or in ledger.kv: set by its first token, or by
	// an engine report of it running (markRunning).
	inKV bool
	// accepted, when set, is closed once the engine reports the request
	// running (markRunning): the sidecar then tells its balancer the work is
	// accepted (102 Processing) so that no first-byte timeout cuts it.
	accepted chan struct{}
}

// admit records a request's arrival from origin ("" for none).
func (l *ledger) admit(origin string, stream bool) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	e := &entry{id: l.next, stream: stream}
	if origin != "" {
		o := l.origins[origin]
		if o == nil && len(l.origins) < maxOrigins {
			if l.origins == nil {
				l.origins = make(map[string]*OriginCounts)
			}
			o = &OriginCounts{Origin: origin}
			l.origins[origin] = o
		}
		e.origin = o
	}
	l.live = append(l.live, e)
	l.c.InFlight++
	l.c.Prefilling++
	if o := e.origin; o != nil {
		o.InFlight++
		o.Prefilling++
	}
	return e
}

// setStream records whether e is a streaming request (known once its body
// is read).
func (l *ledger) setStream(e *entry, stream bool) {
	l.mu.Lock()
	e.stream = stream
	l.mu.Unlock()
}

// addTokens counts e's prompt of tokens tokens, prefill of them uncached,
// as prefilling until e's prefill is over.
func (l *ledger) addTokens(e *entry, tokens, prefill int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.PromptTokens += tokens
	if e.prefilled || e.done {
		e.tokens = tokens
		return
	}
	e.tokens, e.prefill = tokens, prefill
	l.c.WaitingPromptTokens += tokens
	l.c.WaitingPrefillTokens += prefill
	if o := e.origin; o != nil {
		o.PrefillTokens += prefill
	}
}

// prefilled records that e's prefill is over (idempotent) with no sign
// that its prompt is in the engine's memory: a failed round trip, or a
// non-streaming response, whose memory is freed as it arrives.
func (l *ledger) prefilled(e *entry) {
	l.mu.Lock()
	l.prefilledLocked(e)
	l.mu.Unlock()
}

// firstToken records a stream's first token: its prefill is over and its
// prompt's blocks are in the engine's memory. Unless an engine report
// already counted it running, they are not in the last scrape's usage yet,
// so they go into kv until the next scrape.
func (l *ledger) firstToken(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.done {
		return
	}
	l.prefilledLocked(e)
	if !e.inKV {
		e.inKV = true
		l.kv.Add(e.prefill)
	}
}

// kvTokens returns the running sum of the KV memory the data path saw taken
// (a stream's first token: its uncached prompt tokens) and freed (the end of
// a request whose prompt was in memory) since the ledger began. Its change
// since a scrape began is what the engine's usage from that scrape lacks
// (LoadStatus.UnscrapedKVTokens). The cached part of a prompt is not
// counted either way: it may be shared with other requests.
func (l *ledger) kvTokens() int64 { return l.kv.Load() }

func (l *ledger) prefilledLocked(e *entry) {
	if e.prefilled {
		return
	}
	e.prefilled = true
	l.c.Prefilling--
	l.c.WaitingPromptTokens -= e.tokens
	l.c.WaitingPrefillTokens -= e.prefill
	if o := e.origin; o != nil {
		o.Prefilling--
		o.PrefillTokens -= e.prefill
	}
}

// finish records the end of e's response (idempotent).
func (l *ledger) finish(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.done {
		return
	}
	l.prefilledLocked(e)
	e.done = true
	if e.inKV {
		l.kv.Add(-e.prefill)
	}
	l.c.InFlight--
	l.c.PromptTokens -= e.tokens
	if o := e.origin; o != nil {
		o.InFlight--
		if o.InFlight == 0 {
			delete(l.origins, o.Origin)
		}
	}
	if i := slices.Index(l.live, e); i >= 0 {
		l.live = slices.Delete(l.live, i, i+1)
	}
}

// markRunning applies an engine report of running requests: engines admit
// in arrival order, so the running oldest requests in flight are past their
// queue. Non-streaming ones among them count as prefilled from now on (their
// first token is invisible to the data path); streams keep waiting for their
// first token, which the data path sees. A long prompt still in a later
// chunk of its prefill is thereby counted as done a little early. Every one
// of them holds memory in the scrape's usage (inKV), so a stream's first
// token after it adds nothing to kv.
func (l *ledger) markRunning(running int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.live[:min(running, len(l.live))] {
		e.inKV = true
		if !e.stream {
			l.prefilledLocked(e)
			if e.accepted != nil {
				close(e.accepted)
				e.accepted = nil
			}
		}
	}
}

// acceptance returns a channel closed when the engine reports e running.
func (l *ledger) acceptance(e *entry) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.accepted == nil && !e.prefilled {
		e.accepted = make(chan struct{})
	}
	if e.accepted == nil { // already running
		c := make(chan struct{})
		close(c)
		return c
	}
	return e.accepted
}

// Counts returns the current counts.
func (l *ledger) Counts() DataPathCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	if len(l.origins) > 0 {
		c.Origins = make([]OriginCounts, 0, len(l.origins))
		for _, o := range l.origins {
			c.Origins = append(c.Origins, *o)
		}
		slices.SortFunc(c.Origins, func(a, b OriginCounts) int {
			return cmp.Or(cmp.Compare(b.InFlight, a.InFlight), cmp.Compare(a.Origin, b.Origin))
		})
	}
	return c
}

// Origin returns the totals and the share of one origin, without building
// the whole breakdown (for the per-response load report).
func (l *ledger) Origin(origin string) (total DataPathCounts, own OriginCounts) {
	l.mu.Lock()
	defer l.mu.Unlock()
	total = l.c
	if o := l.origins[origin]; o != nil {
		own = *o
	}
	own.Origin = origin
	return total, own
}
