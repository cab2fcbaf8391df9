package openai

import (
	"math"
	"strconv"
	"time"
)

// RetryAfter returns the Retry-After value of a 429 or 503 for a wait of d:
// whole seconds, rounded up, at least 1 (RFC 9110's delay-seconds). The
// gateway's rate limits, shedding in proxy mode and the endpoint picker's
// refusals all say it so.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
}
