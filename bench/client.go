package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/inferrail/inferrail/internal/openai"
)

// Response headers the balancer sets.
const (
	HeaderReplica      = "X-Inferrail-Replica"
	HeaderCachedTokens = "X-Inferrail-Cached-Tokens"
	HeaderPromptTokens = "X-Inferrail-Prompt-Tokens"
)

// Record is the measurement of one request. Durations are offsets from the
// run's start (Scheduled) or latencies counted from the scheduled send time.
type Record struct {
	Session int `json:"session"`
	Turn    int `json:"turn"`
	// Scheduled is when the request was due, from the run's start.
	Scheduled time.Duration `json:"scheduled_ns"`
	// SendLag is how late the request actually left.
	SendLag time.Duration `json:"send_lag_ns"`
	// TTFT is the first content token's arrival minus Scheduled.
	TTFT time.Duration `json:"ttft_ns"`
	// E2E is the end of the stream minus Scheduled.
	E2E time.Duration `json:"e2e_ns"`
	// TPOT is (last token - first token) / (tokens - 1); 0 with one token.
	TPOT time.Duration `json:"tpot_ns"`
	// ITL are the gaps between successive content chunks (not in JSON).
	ITL []time.Duration `json:"-"`
	// Status is the HTTP status (0 when no response arrived): of the last
	// attempt, when the request was retried.
	Status int `json:"status"`
	// Retries is how many times the request was sent again after a refusal
	// (Config.Retries).
	Retries int `json:"retries,omitempty"`
	// Err describes a failure ("" for success).
	Err string `json:"err,omitempty"`
	// Cut marks a stream the harness cancelled at the run's drain deadline
	// after its first token: its TTFT, and its TPOT over the tokens that
	// came, are measured, so it counts as answered and is judged by the SLO
	// on them (CompletionTokens counts those tokens). The deadline is the
	// harness's budget, not the target's failure: with 1,000-token answers
	// a policy that admits more requests at once makes every decode step
	// longer and its answers outlast the drain (the ladder at 1.5×).
	Cut bool `json:"cut,omitempty"`
	// PromptTokens, CompletionTokens and CachedTokens come from usage.
	PromptTokens     int  `json:"prompt_tokens"`
	CompletionTokens int  `json:"completion_tokens"`
	CachedTokens     int  `json:"cached_tokens"`
	CachedReported   bool `json:"cached_reported"`
	// PredictedCached is the balancer's x-inferrail-cached-tokens.
	PredictedCached   int  `json:"predicted_cached"`
	PredictedReported bool `json:"predicted_reported"`
	// Replica is the balancer's x-inferrail-replica ("" without one).
	Replica string `json:"replica,omitempty"`
	// Warmup marks requests scheduled during the warm-up, left out of the
	// summary.
	Warmup bool `json:"warmup,omitempty"`
	// RequestID is the X-Request-Id the harness sent ("" in results from
	// before it sent one).
	RequestID string `json:"request_id,omitempty"`
	// EngineTTFT is the engine's own time from the request's arrival there
	// to its first token (enginesim.FinishedRequest.TTFT): the TTFT without
	// the load generator, the balancer, the sidecar and their machine. 0
	// where the engine lists no such request (an engine other than the
	// simulator, or no first token).
	EngineTTFT time.Duration `json:"engine_ttft_ns,omitempty"`
	// EngineQueue is the part of EngineTTFT the request waited to be
	// admitted the first time, and EnginePreemptions how often the engine
	// preempted it for want of KV memory (enginesim.FinishedRequest's Queue
	// and Preemptions); 0 where the engine lists no such request.
	EngineQueue       time.Duration `json:"engine_queue_ns,omitempty"`
	EnginePreemptions int           `json:"engine_preemptions,omitempty"`
	// EngineArrival is the request's arrival at the engine
	// (enginesim.FinishedRequest.Arrival), from the run's start by the wall
	// clock: with the engines on the load generator's machine, minus
	// Scheduled and SendLag it is the way from the client to the engine
	// (the balancer, the sidecar and the engine front end's parsing), and
	// TTFT minus that and EngineTTFT the way back. 0 where the engine lists
	// no arrival.
	EngineArrival time.Duration `json:"engine_arrival_ns,omitempty"`
	// BalancerRoute and BalancerUpstream are the balancer's own times from
	// its Server-Timing header (TimingRoute, TimingUpstream): from the
	// request's headers there to its sending to the replica that answered,
	// and from that sending to the answer's first bytes. 0 without the
	// header (no balancer, or one from before it sent it).
	BalancerRoute    time.Duration `json:"balancer_route_ns,omitempty"`
	BalancerUpstream time.Duration `json:"balancer_upstream_ns,omitempty"`
	// EstimatedTTFT is the balancer's estimated time to first token on the
	// replica that answered, and EstimatedQueueWait and EstimatedMemoryWait
	// the parts of it waiting for the work queued there and for KV memory,
	// from its Server-Timing (TimingEstimate, TimingQueueWait,
	// TimingMemoryWait): held against EngineTTFT they show where the
	// estimate is off. 0 without them (a policy that does not estimate).
	EstimatedTTFT       time.Duration `json:"estimated_ttft_ns,omitempty"`
	EstimatedQueueWait  time.Duration `json:"estimated_queue_wait_ns,omitempty"`
	EstimatedMemoryWait time.Duration `json:"estimated_memory_wait_ns,omitempty"`
	// LowestEstimatedTTFT is the lowest estimate among the candidates
	// (TimingLowestEstimate): EstimatedTTFT above it is what the rule that
	// picked the replica paid. RouteReason is that rule, the decision's
	// reason (TimingRoute's desc, the decision log's reason). Empty and 0
	// without them.
	LowestEstimatedTTFT time.Duration `json:"lowest_estimated_ttft_ns,omitempty"`
	RouteReason         string        `json:"route_reason,omitempty"`
}

// OK reports whether the request was answered: it completed, or the
// harness cut it at its drain deadline after its first token (Cut).
func (r *Record) OK() bool { return r.Err == "" && r.Status == http.StatusOK }

// chatMessage is one message of a request body.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatBody is the request body the harness sends.
type chatBody struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens int  `json:"max_tokens"`
	IgnoreEOS bool `json:"ignore_eos"`
}

// buildBody returns the JSON body of a chat request.
func buildBody(model string, msgs []chatMessage, maxTokens int) ([]byte, error) {
	b := chatBody{Model: model, Messages: msgs, Stream: true, MaxTokens: maxTokens, IgnoreEOS: true}
	b.StreamOptions.IncludeUsage = true
	return json.Marshal(b)
}

// client sends one streaming chat request and measures it.
type client struct {
	http   *http.Client
	url    string // .../v1/chat/completions
	now    func() time.Duration
	header http.Header
	// retries is Config.Retries.
	retries int
}

// do sends body, due at scheduled, and returns its record and the answer text.
func (c *client) do(ctx context.Context, body []byte, scheduled time.Duration, rec *Record) string {
	rec.Scheduled = scheduled
	rec.SendLag = max(0, c.now()-scheduled)
	resp, err := c.send(ctx, body, rec)
	if err != nil {
		rec.Err = err.Error()
		rec.E2E = c.now() - scheduled
		return ""
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	rec.Replica = resp.Header.Get(HeaderReplica)
	if st := resp.Header.Values(HeaderServerTiming); len(st) > 0 {
		rec.BalancerRoute, _ = ServerTiming(st, TimingRoute)
		rec.BalancerUpstream, _ = ServerTiming(st, TimingUpstream)
		rec.EstimatedTTFT, _ = ServerTiming(st, TimingEstimate)
		rec.EstimatedQueueWait, _ = ServerTiming(st, TimingQueueWait)
		rec.EstimatedMemoryWait, _ = ServerTiming(st, TimingMemoryWait)
		rec.LowestEstimatedTTFT, _ = ServerTiming(st, TimingLowestEstimate)
		rec.RouteReason, _ = ServerTimingDesc(st, TimingRoute)
	}
	if v := resp.Header.Get(HeaderCachedTokens); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			rec.PredictedCached, rec.PredictedReported = n, true
		}
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		rec.Err = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		rec.E2E = c.now() - scheduled
		return ""
	}
	answer, err := c.readStream(resp.Body, scheduled, rec)
	rec.E2E = c.now() - scheduled
	switch {
	case err == nil:
	case ctx.Err() != nil && rec.CompletionTokens > 0:
		rec.Cut = true
	default:
		rec.Err = err.Error()
	}
	return answer
}

// readStream consumes the SSE stream, timing each content chunk.
func (c *client) readStream(body io.Reader, scheduled time.Duration, rec *Record) (string, error) {
	dec := openai.NewDecoder(0)
	var (
		events      []openai.Event
		buf         = make([]byte, 32<<10)
		answer      strings.Builder
		first, last time.Duration
		tokens      int
		done        bool
	)
	for !done {
		n, rerr := body.Read(buf)
		if n > 0 {
			at := c.now()
			var err error
			if events, err = dec.Feed(events[:0], buf[:n]); err != nil {
				return answer.String(), fmt.Errorf("decode stream: %w", err)
			}
			for _, ev := range events {
				if ev.Data == openai.Done {
					done = true
					break
				}
				var ch openai.ChatCompletionChunk
				if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
					return answer.String(), fmt.Errorf("decode chunk: %w", err)
				}
				for _, choice := range ch.Choices {
					text, ok := choice.Delta.Content.Get()
					if !ok || text == "" {
						continue
					}
					answer.WriteString(text)
					if tokens == 0 {
						first = at
						rec.TTFT = at - scheduled
					} else {
						rec.ITL = append(rec.ITL, at-last)
					}
					last = at
					tokens++
				}
				if u, ok := ch.Usage.Get(); ok {
					rec.PromptTokens, rec.CompletionTokens = u.PromptTokens, u.CompletionTokens
					rec.CachedTokens, rec.CachedReported = u.CachedTokens()
				}
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				if !done {
					return answer.String(), errors.New("stream ended without [DONE]")
				}
				break
			}
			// What came is measured (Record.Cut): its tokens and their
			// pace, as a finished stream's.
			rec.CompletionTokens = tokens
			if tokens > 1 {
				rec.TPOT = (last - first) / time.Duration(tokens-1)
			}
			return answer.String(), fmt.Errorf("read stream: %w", rerr)
		}
	}
	if tokens == 0 {
		return "", errors.New("stream carried no content")
	}
	if rec.CompletionTokens == 0 {
		rec.CompletionTokens = tokens
	}
	if rec.CompletionTokens > 1 {
		rec.TPOT = (last - first) / time.Duration(rec.CompletionTokens-1)
	}
	return answer.String(), nil
}
