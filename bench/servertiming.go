package bench

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The balancer's Server-Timing metrics (balancer.TimingRoute,
// balancer.TimingUpstream, balancer.TimingEstimate, balancer.TimingQueueWait
// and balancer.TimingMemoryWait).
const (
	HeaderServerTiming = "Server-Timing"
	TimingRoute        = "inferrail-route"
	TimingUpstream     = "inferrail-upstream"
	TimingEstimate     = "inferrail-estimate"
	TimingQueueWait    = "inferrail-queue-wait"
	TimingMemoryWait   = "inferrail-memory-wait"
)

// ServerTiming returns the duration of the metric named name in Server-Timing
// header values (W3C Server Timing: comma-separated metrics, each a name and
// ;-separated parameters, dur in milliseconds, quoted strings allowed in
// parameter values). ok is false when no metric of that name has a valid,
// finite, non-negative dur; the first one that has counts. It never fails on
// malformed input: what it cannot read it skips.
func ServerTiming(values []string, name string) (d time.Duration, ok bool) {
	for _, v := range values {
		for len(v) > 0 {
			var metric string
			metric, v = cutUnquoted(v, ',')
			if d, ok := metricDur(metric, name); ok {
				return d, true
			}
		}
	}
	return 0, false
}

// metricDur returns metric's dur when its name is name.
func metricDur(metric, name string) (time.Duration, bool) {
	head, params := cutUnquoted(metric, ';')
	if !strings.EqualFold(strings.TrimSpace(head), name) {
		return 0, false
	}
	for len(params) > 0 {
		var p string
		p, params = cutUnquoted(params, ';')
		k, v, found := strings.Cut(p, "=")
		if !found || !strings.EqualFold(strings.TrimSpace(k), "dur") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
			return 0, false
		}
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	return 0, false
}

// cutUnquoted cuts s around the first sep outside a quoted string (a
// backslash escapes the next character inside one).
func cutUnquoted(s string, sep byte) (before, after string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}
