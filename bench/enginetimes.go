package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// engineRequestsPath is the simulator's list of its finished requests with
// the engine's own timings (GET /inferrail/debug/requests,
// enginesim.FinishedRequest). Other engines have no such route.
const engineRequestsPath = "/inferrail/debug/requests"

// maxEngineRequestsBytes bounds one engine's list (65,536 requests of about
// 200 bytes each).
const maxEngineRequestsBytes = 64 << 20

// runNonce returns a random tag that makes a run's request ids its own.
func runNonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// EngineTiming is one request as an engine timed it.
type EngineTiming struct {
	// Arrival is the engine front end's receipt by the wall clock (zero
	// from a simulator older than it).
	Arrival time.Time
	// TTFT is the engine's time from Arrival to the first token.
	TTFT time.Duration
	// Queue is the part of TTFT the request waited to be admitted the first
	// time (from its readiness after the front end's overhead), and
	// Preemptions how often the engine preempted it for want of KV memory.
	Queue       time.Duration
	Preemptions int
}

// fetchEngineTimes returns the engines' own timings of the requests they
// finished with a first token, keyed by the id the client sent: each
// engine's page is found beside its metrics page (engineRequestsPath on the
// same host). An engine that serves no such page makes it return an error.
func fetchEngineTimes(ctx context.Context, hc *http.Client, metrics []string) (map[string]EngineTiming, error) {
	if len(metrics) == 0 {
		return nil, fmt.Errorf("no engines")
	}
	out := map[string]EngineTiming{}
	for _, m := range metrics {
		u, err := url.Parse(m)
		if err != nil {
			return nil, fmt.Errorf("engine metrics url %q: %w", m, err)
		}
		u.Path, u.RawQuery = engineRequestsPath, ""
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("engine requests %s: %w", u, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("engine requests %s: %w", u, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxEngineRequestsBytes+1))
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("engine requests %s: %w", u, err)
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("engine requests %s: status %d", u, resp.StatusCode)
		case len(body) > maxEngineRequestsBytes:
			return nil, fmt.Errorf("engine requests %s: over %d bytes", u, maxEngineRequestsBytes)
		}
		if err := ParseEngineTimes(body, out); err != nil {
			return nil, fmt.Errorf("engine requests %s: %w", u, err)
		}
	}
	return out, nil
}

// ParseEngineTimes adds to into the timings of every request in the body of
// GET /inferrail/debug/requests that has a first token, keyed by the id the
// client sent: the engine request id without the suffix the front end adds
// after its last '-'. A request the balancer retried elsewhere before its
// first byte appears on two engines; the one with a first token counts.
func ParseEngineTimes(body []byte, into map[string]EngineTiming) error {
	var page struct {
		Ranks []struct {
			Requests []struct {
				ID          string        `json:"id"`
				Arrival     time.Time     `json:"arrival"`
				TTFT        time.Duration `json:"ttft_ns"`
				Queue       time.Duration `json:"queue_ns"`
				Preemptions int           `json:"preemptions"`
			} `json:"requests"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return fmt.Errorf("parse engine requests: %w", err)
	}
	for _, rk := range page.Ranks {
		for _, r := range rk.Requests {
			i := strings.LastIndexByte(r.ID, '-')
			if i <= 0 || r.TTFT <= 0 {
				continue
			}
			into[r.ID[:i]] = EngineTiming{Arrival: r.Arrival, TTFT: r.TTFT, Queue: max(r.Queue, 0), Preemptions: max(r.Preemptions, 0)}
		}
	}
	return nil
}
