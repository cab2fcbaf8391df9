// Package loadreport is the load a sidecar returns with every response it
// proxies for a balancer, so that the balancer's view of the replica moves
// with every reply and not only with each gossip period.
//
// The report travels in the ORCA response header `endpoint-load-metrics`
// (the convention of Envoy's ORCA support, gRPC's ORCA and vLLM's own
// `--orca-metrics-format`; docs/routing.md#the-load-model), in its TEXT form:
//
//	endpoint-load-metrics: TEXT named_metrics.in_flight=3, named_metrics.prefill_tokens=2048, ...
//
// once in the response headers and again as a trailer when the response
// ends. The balancer strips both before the client sees the response.
package loadreport

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Header names.
const (
	// Header is the ORCA load-report header (and trailer).
	Header = "Endpoint-Load-Metrics"
	// Origin is the request header naming the balancer that sent the
	// request; the sidecar reports that balancer's share beside the totals
	// and answers with a report only when it is set.
	Origin = "X-Inferrail-Balancer"
)

// MaxOriginLen bounds an origin name.
const MaxOriginLen = 128

// Report is a replica's load at the moment its sidecar wrote a response.
type Report struct {
	// Running and Waiting are the engine's running and queued requests at
	// its last readable metrics page; KVUsage its KV-cache usage in [0,1].
	Running, Waiting int64
	KVUsage          float64
	// InFlight, Prefilling and PrefillTokens are the sidecar's exact data
	// path counts over every origin: requests in flight, those whose
	// prefill is not over, and the uncached prompt tokens of those.
	InFlight, Prefilling, PrefillTokens int64
	// OwnInFlight, OwnPrefilling and OwnPrefillTokens are the same counts
	// for the requests of the origin the report answers.
	OwnInFlight, OwnPrefilling, OwnPrefillTokens int64
}

// The named metrics, in the order Encode writes them.
var names = [...]string{
	"running", "waiting", "kv_usage", "in_flight", "prefilling", "prefill_tokens",
	"own_in_flight", "own_prefilling", "own_prefill_tokens",
}

func (r *Report) fields() [len(names)]*int64 {
	return [...]*int64{&r.Running, &r.Waiting, nil, &r.InFlight, &r.Prefilling, &r.PrefillTokens,
		&r.OwnInFlight, &r.OwnPrefilling, &r.OwnPrefillTokens}
}

// Encode returns the header value for r.
func (r Report) Encode() string {
	var b strings.Builder
	b.Grow(256)
	b.WriteString("TEXT ")
	f := r.fields()
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("named_metrics.")
		b.WriteString(n)
		b.WriteByte('=')
		if f[i] == nil {
			b.WriteString(strconv.FormatFloat(r.KVUsage, 'g', 4, 64))
		} else {
			b.WriteString(strconv.FormatInt(*f[i], 10))
		}
	}
	return b.String()
}

// ErrMalformed is wrapped by every Parse error.
var ErrMalformed = errors.New("malformed load report")

// Parse decodes a header value written by Encode. Other ORCA fields and
// unknown named metrics are ignored; every metric of ours must be present,
// finite and not negative.
func Parse(v string) (Report, error) {
	var r Report
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "TEXT ")
	if !ok {
		return r, fmt.Errorf("%w: not the TEXT format", ErrMalformed)
	}
	f := r.fields()
	var seen [len(names)]bool
	for kv := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Report{}, fmt.Errorf("%w: %q is not key=value", ErrMalformed, trim(kv))
		}
		n, ok := strings.CutPrefix(k, "named_metrics.")
		if !ok {
			continue
		}
		i := index(n)
		if i < 0 {
			continue
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > math.MaxInt64/2 {
			return Report{}, fmt.Errorf("%w: %s=%q", ErrMalformed, n, trim(val))
		}
		if f[i] == nil {
			r.KVUsage = x
		} else {
			*f[i] = int64(x)
		}
		seen[i] = true
	}
	for i, s := range seen {
		if !s {
			return Report{}, fmt.Errorf("%w: no named_metrics.%s", ErrMalformed, names[i])
		}
	}
	return r, nil
}

func index(n string) int {
	for i, x := range names {
		if x == n {
			return i
		}
	}
	return -1
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ValidOrigin reports whether s may name an origin: 1 to MaxOriginLen
// printable ASCII bytes without spaces.
func ValidOrigin(s string) bool {
	if s == "" || len(s) > MaxOriginLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
