package enginesim

import (
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// seqState is where a sequence is in its life.
type seqState uint8

const (
	seqPending  seqState = iota // submitted, inside RequestOverhead
	seqWaiting                  // in the waiting queue (new or preempted)
	seqRunning                  // in the running batch
	seqFinished                 // done; Out closed
)

// seq is one submitted request inside the engine. All fields are guarded by
// the engine's lock.
type seq struct {
	req   *Request
	state seqState
	epoch uint64 // engine epoch it belongs to (Restart bumps it)

	tokens    []uint32       // prompt then generated tokens (never rewritten, only appended)
	promptLen int            // len(req.Prompt)
	hashes    []kvblock.Hash // router hashes of every full block of tokens

	blocks          []int32 // KV blocks held, in token order
	numCachedBlocks int     // leading blocks registered in the prefix cache
	computed        int     // tokens whose KV is computed (or scheduled this step)
	decoding        bool    // sampled a token since its last (re)admission
	cachedTokens    int     // prefix hit at first admission, -1 before
	numOutput       int     // generated tokens
	preemptions     int

	arrival    time.Time // Request.Arrival, or the submission time
	readyAt    time.Time // arrival + RequestOverhead (zero with ZeroLatency)
	firstSched time.Time // first admission (queue time ends)
	firstToken time.Time
	lastToken  time.Time

	out     chan Output
	pending Output // coalesced output not yet delivered
	hasPend bool
}

func (s *seq) numTokens() int { return len(s.tokens) }

// queueTime is the wait from readiness (the arrival with ZeroLatency) to
// the first admission.
func (s *seq) queueTime() time.Duration {
	ready := s.readyAt
	if ready.IsZero() {
		ready = s.arrival
	}
	return s.firstSched.Sub(ready)
}

// appendToken adds a generated token and extends the block-hash chain when
// it completes a block.
func (s *seq) appendToken(tok uint32, bs int) {
	s.tokens = append(s.tokens, tok)
	s.numOutput++
	if n := len(s.tokens); n%bs == 0 {
		parent := s.req.Seed
		if len(s.hashes) > 0 {
			parent = s.hashes[len(s.hashes)-1]
		}
		s.hashes = append(s.hashes, kvblock.Next(parent, s.tokens[n-bs:n]))
	}
}

// stopReason returns the finish reason after the token just appended, or "".
// The order follows vLLM's check_stop: length first, then min_tokens, EOS and
// stop token ids.
func (s *seq) stopReason() string {
	r := s.req
	if s.numOutput >= r.MaxTokens {
		return "length"
	}
	i := s.numOutput - 1 // index of the token just generated
	if i < r.MinTokens {
		return ""
	}
	last := s.tokens[len(s.tokens)-1]
	if !r.IgnoreEOS && last == r.EOS {
		return "stop"
	}
	for _, t := range r.StopTokenIDs {
		if t == last {
			return "stop"
		}
	}
	return ""
}

// push queues o (merged with anything undelivered) and delivers it if the
// channel has room. A non-final Output never takes the channel's last slot,
// so the final one always fits and the step loop never blocks.
func (s *seq) push(o Output) {
	if s.hasPend {
		s.pending.Tokens = append(s.pending.Tokens, o.Tokens...)
		s.pending.Time = o.Time
		s.pending.Finished, s.pending.FinishReason = o.Finished, o.FinishReason
	} else {
		s.pending, s.hasPend = o, true
	}
	s.pending.PromptTokens = s.promptLen
	s.pending.CachedTokens = max(s.cachedTokens, 0)
	if s.pending.Finished {
		s.out <- s.pending // always room, see above
		close(s.out)
		s.pending, s.hasPend = Output{}, false
		return
	}
	if len(s.out) < cap(s.out)-1 {
		s.out <- s.pending
		s.pending, s.hasPend = Output{}, false
	}
}

// flush retries delivering coalesced output for a slow reader.
func (s *seq) flush() {
	if s.hasPend && len(s.out) < cap(s.out)-1 {
		s.out <- s.pending
		s.pending, s.hasPend = Output{}, false
	}
}

// outCap sizes a sequence's Out channel: room for every Output of a short
// sequence, a bounded buffer (with coalescing) for a long one.
func outCap(maxTokens int) int { return min(maxTokens, 62) + 2 }
