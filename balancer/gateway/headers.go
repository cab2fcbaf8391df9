package gateway

import (
	"net/http"
	"strconv"
	"time"
)

// OpenAI's rate-limit response headers
// (platform.openai.com/docs/guides/rate-limits, "Rate limits in headers").
// Limit is the bucket's size, remaining the whole units left, reset the
// time until the bucket is full again, in OpenAI's duration format.
const (
	HeaderLimitRequests     = "X-Ratelimit-Limit-Requests"
	HeaderRemainingRequests = "X-Ratelimit-Remaining-Requests"
	HeaderResetRequests     = "X-Ratelimit-Reset-Requests"
	HeaderLimitTokens       = "X-Ratelimit-Limit-Tokens"
	HeaderRemainingTokens   = "X-Ratelimit-Remaining-Tokens"
	HeaderResetTokens       = "X-Ratelimit-Reset-Tokens"
)

// FormatReset writes d as OpenAI writes its reset headers ("1s", "6m0s",
// "120ms", "8.369s"): Go's duration format at millisecond precision, rounded
// up so a client that waits that long finds the units there.
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
	return ms.String()
}

// setLimitHeaders writes the headers of both buckets that are on.
func setLimitHeaders(h http.Header, q Quota, lv Levels) {
	if q.Requests.On() {
		s := q.Requests.status(lv.Requests, 0)
		h.Set(HeaderLimitRequests, strconv.FormatInt(s.Limit, 10))
		h.Set(HeaderRemainingRequests, strconv.FormatInt(s.Remaining, 10))
		h.Set(HeaderResetRequests, FormatReset(s.Reset))
	}
	if q.Tokens.On() {
		s := q.Tokens.status(lv.Tokens, 0)
		h.Set(HeaderLimitTokens, strconv.FormatInt(s.Limit, 10))
		h.Set(HeaderRemainingTokens, strconv.FormatInt(s.Remaining, 10))
		h.Set(HeaderResetTokens, FormatReset(s.Reset))
	}
}
