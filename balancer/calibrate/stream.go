package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/inferrail/inferrail/internal/openai"
)

// tokenEvent is one token-bearing event of a completion stream: when it
// arrived and how many generated tokens it carried.
type tokenEvent struct {
	At     time.Time
	Tokens int
}

// streamResult is what a completion stream told: its token-bearing events
// in order and the usage of its final chunk (if any).
type streamResult struct {
	Events   []tokenEvent
	Usage    openai.Usage
	HasUsage bool
}

// streamChunk is a completion stream chunk, or the error object an engine
// sends in place of one when a request fails mid-stream.
type streamChunk struct {
	openai.CompletionChunk
	Error json.RawMessage `json:"error"`
}

// readStream reads an OpenAI completions SSE stream to its [DONE] and
// times every token-bearing event with now() at the read that completed it.
// An event carries tokens when a choice has token ids (return_token_ids) —
// then it counts them — or, without ids, non-empty text (one token: an
// engine that merges queued outputs into one chunk is then undercounted,
// which only makes the inter-token gaps longer). Response headers and
// role-only or empty chunks are not tokens: engines send headers when the
// request is admitted, before its prefill. The stream must end with [DONE].
func readStream(r io.Reader, now func() time.Time) (streamResult, error) {
	var (
		res    streamResult
		dec    = openai.NewDecoder(1 << 20)
		events []openai.Event
		buf    = make([]byte, 16<<10)
	)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			at := now()
			var err error
			if events, err = dec.Feed(events[:0], buf[:n]); err != nil {
				return res, fmt.Errorf("decode stream: %w", err)
			}
			for _, ev := range events {
				if ev.Data == openai.Done {
					return res, nil
				}
				if err := res.add(ev.Data, at); err != nil {
					return res, err
				}
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return res, errors.New("stream ended without [DONE]")
			}
			return res, fmt.Errorf("read stream: %w", rerr)
		}
	}
}

// add accounts for one event's data.
func (res *streamResult) add(data string, at time.Time) error {
	var ch streamChunk
	if err := json.Unmarshal([]byte(data), &ch); err != nil {
		return fmt.Errorf("decode chunk: %w", err)
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return fmt.Errorf("engine error in stream: %s", truncate(string(ch.Error), 300))
	}
	tokens := 0
	for _, c := range ch.Choices {
		switch {
		case len(c.TokenIDs) > 0:
			tokens += len(c.TokenIDs)
		case c.Text != "":
			tokens++
		}
	}
	if tokens > 0 {
		res.Events = append(res.Events, tokenEvent{At: at, Tokens: tokens})
	}
	if u, ok := ch.Usage.Get(); ok {
		res.Usage, res.HasUsage = u, true
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
