package load

// This file is the report's form in the ORCA response header
// `endpoint-load-metrics` (the convention of Envoy's ORCA support, gRPC's ORCA
// and vLLM's own `--orca-metrics-format`; docs/routing.md#the-load-model), in
// its TEXT form:
//
//	endpoint-load-metrics: TEXT named_metrics.in_flight=3, named_metrics.prefill_tokens=2048, ...
//
// A sidecar writes it once in the response headers and again as a trailer
// when the response ends, with the share of the balancer the response goes
// to; the balancer strips both before the client sees the response.

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

// The named metrics, in the order EncodeHeader writes them. The header
// carries no origin list: its own_* metrics are the recipient's Share.
var names = [...]string{
	"running", "waiting", "kv_usage", "in_flight", "prefilling", "prefill_tokens",
	"own_in_flight", "own_prefilling", "own_prefill_tokens", "blocks_held",
}

// optional is the index of the one metric a report may lack (a sidecar
// older than it): ParseHeader then sets Report.HeldBlocks to -1.
const optional = len(names) - 1

func fields(r *Report, own *Share) [len(names)]*int64 {
	return [...]*int64{&r.Running, &r.Waiting, nil, &r.InFlight, &r.Pending, &r.PrefillTokens,
		&own.InFlight, &own.Pending, &own.PrefillTokens, &r.HeldBlocks}
}

// EncodeHeader returns the header value of r for the balancer whose share
// is own. r.Origins is not written.
func EncodeHeader(r Report, own Share) string {
	var b strings.Builder
	b.Grow(256)
	b.WriteString("TEXT ")
	f := fields(&r, &own)
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("named_metrics.")
		b.WriteString(n)
		b.WriteByte('=')
		switch {
		case f[i] == nil:
			b.WriteString(strconv.FormatFloat(r.KVUsage, 'g', 4, 64))
		case i == optional:
			b.WriteString(strconv.FormatInt(max(*f[i], -1), 10))
		default:
			b.WriteString(strconv.FormatInt(*f[i], 10))
		}
	}
	return b.String()
}

// ErrMalformed is wrapped by every ParseHeader error.
var ErrMalformed = errors.New("malformed load report")

// ParseHeader decodes a header value written by EncodeHeader: the report
// (without Origins) and the recipient's share (without its Origin name,
// which the header does not carry). Other ORCA fields and unknown named
// metrics are ignored; every metric of ours must be present (but blocks_held,
// -1 when absent), finite and not negative (but blocks_held, -1 unknown).
func ParseHeader(v string) (Report, Share, error) {
	var r Report
	var own Share
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "TEXT ")
	if !ok {
		return r, own, fmt.Errorf("%w: not the TEXT format", ErrMalformed)
	}
	f := fields(&r, &own)
	var seen [len(names)]bool
	for kv := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Report{}, Share{}, fmt.Errorf("%w: %q is not key=value", ErrMalformed, trim(kv))
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
		low := 0.0
		if i == optional {
			low = -1 // unknown
		}
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < low || x > math.MaxInt64/2 {
			return Report{}, Share{}, fmt.Errorf("%w: %s=%q", ErrMalformed, n, trim(val))
		}
		switch {
		case f[i] == nil:
			r.KVUsage = x
		case x < 0: // only the optional metric may be negative: unknown
			*f[i] = -1
		default:
			*f[i] = int64(x)
		}
		seen[i] = true
	}
	if !seen[optional] {
		r.HeldBlocks = -1
	}
	for i, s := range seen {
		if !s && i != optional {
			return Report{}, Share{}, fmt.Errorf("%w: no named_metrics.%s", ErrMalformed, names[i])
		}
	}
	return r, own, nil
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
