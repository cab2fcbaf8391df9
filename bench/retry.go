package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// maxRetries bounds Config.Retries.
const maxRetries = 10

// send posts body and returns the response, sending it again after a
// refusal (refused) while c.retries allows, each time after retryWait; the
// response returned is the last one. rec.Retries counts the resends.
func (c *client) send(ctx context.Context, body []byte, rec *Record) (*http.Response, error) {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		for k, v := range c.header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if rec.RequestID != "" {
			req.Header.Set("X-Request-Id", rec.RequestID)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
		if !refused(resp.StatusCode) || rec.Retries >= c.retries {
			return resp, nil
		}
		wait := retryWait(resp.Header, rec.Retries, time.Now())
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("send: waiting %v to retry after status %d: %w", wait, resp.StatusCode, ctx.Err())
		}
		rec.Retries++
	}
}

// refused reports whether status is a refusal a client may retry: 429 (too
// many requests; the endpoint picker's answer when it sheds) or 503
// (unavailable; the balancer's when it sheds or has no replica).
func refused(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// retryWait is the wait before resend n+1 (n resends made so far) of a
// request refused with header h, as OpenAI's Python client chooses it
// (openai-python, src/openai/_base_client.py, _calculate_retry_timeout):
// the server's retry-after-ms (milliseconds) or else Retry-After (seconds,
// or an HTTP date from now) when it is more than 0 and at most 60 s;
// otherwise 0.5 s doubled for every resend made, at most 8 s. (The client
// also takes up to a quarter off the backoff at random; a benchmark
// replays without it.)
func retryWait(h http.Header, n int, now time.Time) time.Duration {
	if s, ok := retryAfter(h, now); ok && s > 0 && s <= 60 {
		if d := time.Duration(s * float64(time.Second)); d > 0 { // not under a nanosecond
			return d
		}
	}
	return min(500*time.Millisecond<<min(n, 4), 8*time.Second)
}

// retryAfter reads the wait a refusal asks for, in seconds: retry-after-ms,
// or else Retry-After as seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (float64, bool) {
	finite := func(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && finite(ms) {
		return ms / 1000, true
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && finite(s) {
		return s, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return at.Sub(now).Seconds(), true
	}
	return 0, false
}
