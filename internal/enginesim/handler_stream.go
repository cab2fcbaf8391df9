package enginesim

import (
	"context"

	"github.com/inferrail/inferrail/internal/openai"
)

// seqStep is one engine Output turned into text for the client.
type seqStep struct {
	delta     string
	newTokens []uint32
	finished  bool
	reason    string
	// first is set on the first Output of the sequence.
	first bool
}

// seqReader reads a submitted sequence, applies stop strings and aborts the
// engine sequence when the client goes away or a stop string matches.
type seqReader struct {
	st      *Stream
	ts      *textStream
	prompt  int
	cached  int
	started bool
	done    bool
}

// next returns the next step; ok is false when ctx ended (the sequence has
// then been aborted with "abort").
func (q *seqReader) next(ctx context.Context) (seqStep, bool) {
	select {
	case <-ctx.Done():
		q.st.Abort("abort")
		drainStream(q.st)
		q.done = true
		return seqStep{}, false
	case out, ok := <-q.st.Out:
		step := seqStep{first: !q.started}
		q.started = true
		if !ok { // closed without a final Output: treat as aborted
			q.done = true
			step.finished, step.reason = true, "abort"
			step.delta = q.ts.flush()
			return step, true
		}
		// Like vLLM's output collector, merge the outputs that are already
		// waiting into one delta: a slow reader gets fewer, larger chunks.
		out = mergeReady(q.st.Out, out)
		q.prompt, q.cached = out.PromptTokens, out.CachedTokens
		n := len(q.ts.tokens)
		step.delta = q.ts.push(out.Tokens)
		step.newTokens = q.ts.tokens[n:]
		step.finished, step.reason = out.Finished, out.FinishReason
		if q.ts.stopped {
			if !out.Finished {
				q.st.Abort("stop")
				drainStream(q.st)
			}
			step.finished, step.reason = true, "stop"
		}
		if step.finished {
			step.delta += q.ts.flush()
			q.done = true
		}
		return step, true
	}
}

// stopReason returns the choice's stop_reason.
func (q *seqReader) stopReason() openai.StopReason { return q.ts.reason }

// mergeReady appends to out every Output already queued on ch, up to and
// including a final one.
func mergeReady(ch <-chan Output, out Output) Output {
	merged := false
	for !out.Finished {
		select {
		case next, ok := <-ch:
			if !ok {
				return out
			}
			if !merged {
				out.Tokens = append([]uint32(nil), out.Tokens...)
				merged = true
			}
			out.Tokens = append(out.Tokens, next.Tokens...)
			out.Finished, out.FinishReason = next.Finished, next.FinishReason
			out.PromptTokens, out.CachedTokens, out.Time = next.PromptTokens, next.CachedTokens, next.Time
		default:
			return out
		}
	}
	return out
}
