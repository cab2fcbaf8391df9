package bench

import (
	"iter"
	"math"
	"strconv"
	"strings"
	"time"
)

// The balancer's Server-Timing metrics (balancer.TimingRoute, whose desc
// is the decision's reason, balancer.TimingUpstream, balancer.TimingEstimate,
// balancer.TimingQueueWait, balancer.TimingMemoryWait and
// balancer.TimingLowestEstimate).
const (
	HeaderServerTiming   = "Server-Timing"
	TimingRoute          = "inferrail-route"
	TimingUpstream       = "inferrail-upstream"
	TimingEstimate       = "inferrail-estimate"
	TimingQueueWait      = "inferrail-queue-wait"
	TimingMemoryWait     = "inferrail-memory-wait"
	TimingLowestEstimate = "inferrail-lowest-estimate"
)

// maxTimingDesc bounds a desc ServerTimingDesc returns.
const maxTimingDesc = 64

// ServerTiming returns the duration of the metric named name in Server-Timing
// header values (W3C Server Timing: comma-separated metrics, each a name and
// ;-separated parameters, dur in milliseconds, quoted strings allowed in
// parameter values). ok is false when no metric of that name has a valid,
// finite, non-negative dur; the first one that has counts. It never fails on
// malformed input: what it cannot read it skips.
func ServerTiming(values []string, name string) (d time.Duration, ok bool) {
	for metric := range metrics(values, name) {
		if v, found := param(metric, "dur"); found {
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
				continue
			}
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return 0, false
}

// ServerTimingDesc returns the desc of the first metric named name in
// Server-Timing header values that has one of 1 to maxTimingDesc
// printable ASCII characters (a token or a quoted string, unquoted); ok is
// false when none has. Like ServerTiming it skips what it cannot read.
func ServerTimingDesc(values []string, name string) (desc string, ok bool) {
	for metric := range metrics(values, name) {
		if v, found := param(metric, "desc"); found && v != "" && len(v) <= maxTimingDesc && printable(v) {
			return v, true
		}
	}
	return "", false
}

// metrics yields the metrics named name in Server-Timing header values,
// each with its parameters after the name.
func metrics(values []string, name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, v := range values {
			for len(v) > 0 {
				var metric string
				metric, v = cutUnquoted(v, ',')
				head, params := cutUnquoted(metric, ';')
				if strings.EqualFold(strings.TrimSpace(head), name) && !yield(params) {
					return
				}
			}
		}
	}
}

// param returns the value of a metric's first parameter named key, trimmed
// and with its quotes (not its escapes) taken off.
func param(params, key string) (string, bool) {
	for len(params) > 0 {
		var p string
		p, params = cutUnquoted(params, ';')
		k, v, found := strings.Cut(p, "=")
		if !found || !strings.EqualFold(strings.TrimSpace(k), key) {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		return v, true
	}
	return "", false
}

// printable reports whether s is printable ASCII.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
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
