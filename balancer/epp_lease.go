package balancer

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// eppTarget is one endpoint of a pick with its predicted tokens.
type eppTarget struct {
	rep              *fleet.Replica
	ticket           route.Ticket // from rep.TryAcquire
	endpoint         string
	cached, uncached int
}

// eppLease follows a pick through the gateway: the pick holds the lease
// (TryAcquire at the decision, as in proxy mode); when the gateway reports
// that a fallback served the request, the lease moves there; the first
// response byte settles the pending prefill (Counters.Prefilled, the overlay
// placement) and the end of the stream releases it (Counters.Done). Called
// from one stream only (epp.Lease).
type eppLease struct {
	p      *eppPicker
	model  *model
	route  string
	tokens int
	output int // the request's OutputReserve, counted on cur.rep
	// estimated: tokens and the cached counts are text prefix estimates.
	estimated bool
	// hashes are the placement the first byte settles (nil: none).
	hashes []kvblock.Hash

	cur       eppTarget // cur.rep nil: not counted (a fallback at its caps)
	alts      []eppTarget
	status    int
	prefilled bool
	done      bool
}

// Served moves the lease to the endpoint that served the request, reports
// the response to the replica's health, and returns the headers proxy mode
// adds to a response: the replica, the prompt and predicted cached tokens.
func (l *eppLease) Served(endpoint string, status int) map[string]string {
	l.status = status
	if endpoint != "" && endpoint != l.cur.endpoint && !l.done {
		next := eppTarget{endpoint: endpoint, cached: l.cur.cached, uncached: l.cur.uncached}
		found := false
		for _, a := range l.alts {
			if a.endpoint == endpoint {
				next, found = a, true
				break
			}
		}
		if !found {
			next.rep = l.p.index(l.p.b.fleet.Snapshot()).byAddr[endpoint]
		}
		if l.cur.rep != nil {
			l.cur.rep.Counters.Done(l.cur.uncached, l.output, l.cur.ticket, l.prefilled)
		}
		if next.rep != nil {
			t, ok := next.rep.TryAcquire(next.uncached, l.output)
			if !ok {
				next.rep = nil
			}
			next.ticket = t
		}
		l.cur = next
	}
	if rep := l.cur.rep; rep != nil {
		switch {
		case status == 502 || status == 503 || status == 504:
			l.p.b.fleet.ReportFailure(rep)
		case status > 0 && status < 500:
			l.p.b.fleet.ReportSuccess(rep)
		}
	}
	if l.cur.rep == nil {
		return nil
	}
	h := map[string]string{HeaderReplica: l.cur.rep.ID}
	if l.tokens > 0 {
		h[HeaderPromptTokens] = strconv.Itoa(l.tokens)
		h[HeaderCachedTokens] = strconv.Itoa(l.cur.cached)
		if l.estimated {
			h[HeaderTokensEstimated] = "true"
		}
	}
	return h
}

// Prefilled settles the pick's pending prefill, as proxy mode does at the
// first token.
func (l *eppLease) Prefilled(firstToken bool) {
	if l.prefilled || l.done {
		return
	}
	l.prefilled = true
	rep := l.cur.rep
	if rep == nil {
		return
	}
	var first time.Time
	if firstToken {
		first = l.p.b.now()
	}
	rep.Counters.Prefilled(l.cur.uncached, l.cur.ticket, first)
	if s, ok := l.model.policy.(route.Settler); ok {
		s.Settle(l.hashes, rep.ID, l.p.b.now())
	}
	if l.tokens > 0 {
		l.p.b.m.cachedTokens.WithLabelValues(l.model.cfg.Name).Observe(float64(l.cur.cached))
	}
}

// Done releases the lease and counts the request by its response status.
func (l *eppLease) Done() {
	if l.done {
		return
	}
	l.done = true
	if rep := l.cur.rep; rep != nil {
		rep.Counters.Done(l.cur.uncached, l.output, l.cur.ticket, l.prefilled)
	}
	outcome := outcomeClientGone // the stream ended before any response
	switch {
	case l.status >= 500:
		outcome = outcomeUpstream5xx
	case l.status >= 400:
		outcome = outcomeClientError
	case l.status > 0:
		outcome = outcomeOK
	}
	l.p.b.m.requests.WithLabelValues(l.model.cfg.Name, l.route, outcome, modeEPP).Inc()
}

// fallbackOrder returns up to n candidate indices to try after pick: the
// other eligible candidates (not excluded, healthy, scored or predicted by
// the policy where it scores or predicts, else below their caps), best
// first by the policy's own scores (cost_model: lowest estimated TTFT;
// kv_aware: highest blend), then by predicted cached tokens, then by this
// balancer's in-flight count, then by index. They are not leased: a
// fallback is counted only when the gateway reports it served.
func fallbackOrder(policy string, d route.Decision, cands []route.Candidate, exclude []int, pick, n int) []int {
	if n <= 0 {
		return nil
	}
	var out []int
	for i := range cands {
		c := &cands[i]
		if i == pick || slices.Contains(exclude, i) || !c.Healthy {
			continue
		}
		switch {
		case d.Scores != nil:
			if math.IsNaN(d.Scores[i]) {
				continue
			}
		case d.Cached != nil:
			if d.Cached[i] < 0 {
				continue
			}
		default:
			if c.Own != nil && ((c.MaxConcurrency > 0 && c.Own.InFlight.Load() >= int64(c.MaxConcurrency)) ||
				(c.MaxPending > 0 && c.Own.Pending.Load() >= int64(c.MaxPending))) {
				continue
			}
		}
		out = append(out, i)
	}
	higherWins := policy == route.PolicyKVAware
	slices.SortStableFunc(out, func(a, b int) int {
		if d.Scores != nil && d.Scores[a] != d.Scores[b] {
			if higherWins {
				return cmp.Compare(d.Scores[b], d.Scores[a])
			}
			return cmp.Compare(d.Scores[a], d.Scores[b])
		}
		if d.Cached != nil && d.Cached[a] != d.Cached[b] {
			return cmp.Compare(d.Cached[b], d.Cached[a])
		}
		return cmp.Compare(inFlight(&cands[a]), inFlight(&cands[b]))
	})
	return out[:min(n, len(out))]
}

func inFlight(c *route.Candidate) int64 {
	if c.Own == nil {
		return 0
	}
	return c.Own.InFlight.Load()
}
