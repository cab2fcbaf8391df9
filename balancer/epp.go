package balancer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/inferrail/inferrail/balancer/epp"
	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

// eppPicker is the endpoint-picker mode's routing: it implements epp.Picker
// with forward's own steps (prepare: parse, tokenize, hash; decide: the
// model's policy over the snapshot's candidates; a lease taken with
// TryAcquire), and tells the gateway the pick instead of proxying to it.
type eppPicker struct {
	b   *Balancer
	idx atomic.Pointer[endpointIndex]
}

var _ epp.Picker = (*eppPicker)(nil)

// Ready reports whether some replica is healthy.
func (p *eppPicker) Ready() bool {
	now := p.b.now()
	for _, rep := range p.b.fleet.Snapshot().Replicas {
		if rep.Healthy(now) {
			return true
		}
	}
	return false
}

// eppRoute returns the kind of a request path (query dropped) and the route
// label; ok is false for a path the balancer does not route.
func eppRoute(path string) (k kind, ok bool) {
	path, _, _ = strings.Cut(path, "?")
	switch path {
	case "/v1/chat/completions":
		return kindChat, true
	case "/v1/completions":
		return kindCompletions, true
	case "/v1/embeddings":
		return kindEmbeddings, true
	}
	return 0, false
}

// routeBodyless is the route label of requests without a body.
const routeBodyless = "bodyless"

// Pick routes one request a gateway asks about.
func (p *eppPicker) Pick(ctx context.Context, r *epp.Request) (*epp.Pick, error) {
	b := p.b
	rq := request{start: b.now(), id: r.Header.Get(HeaderRequestID), mode: modeEPP}
	sc := b.getScratch()
	defer b.putScratch(sc)
	if r.Body == nil {
		return p.pickBodyless(&rq, &r.Subset, sc)
	}
	k, ok := eppRoute(r.Path)
	if !ok {
		p.count("unknown", "other", outcomeBadRequest)
		return nil, openai.RouteNotFound()
	}
	rq.kind = k
	body := r.Body
	if oerr := b.prepare(ctx, &rq, body, sc); oerr != nil {
		p.count("unknown", k.String(), outcomeBadRequest)
		return nil, oerr
	}
	pk, outcome, oerr := p.route(&rq, k.String(), &r.Subset, sc)
	if oerr != nil {
		p.count(rq.model.cfg.Name, k.String(), outcome)
		return nil, oerr
	}
	if len(rq.body) != len(body) || string(rq.body) != string(body) {
		pk.Body, pk.Model = rq.body, rq.model.cfg.Name
	}
	return pk, nil
}

// pickBodyless routes a request without a body (GET /v1/models, /health):
// the sole model's replicas, else the first model with a ready endpoint,
// with no prompt to predict.
func (p *eppPicker) pickBodyless(rq *request, sub *epp.Subset, sc *scratch) (*epp.Pick, error) {
	b := p.b
	snap := b.fleet.Snapshot()
	names := snap.ModelNames
	if sole := b.soleModel(snap); sole != "" {
		names = []string{sole}
	}
	rq.kind = kindEmbeddings // no prompt
	var last error
	for _, name := range names {
		if rq.model = b.cur().models.lookup(name, snap); rq.model == nil {
			continue
		}
		pk, outcome, oerr := p.route(rq, routeBodyless, sub, sc)
		if oerr == nil {
			return pk, nil
		}
		p.count(name, routeBodyless, outcome)
		last = oerr
	}
	if last == nil {
		p.count("unknown", routeBodyless, outcomeNoReplica)
		last = openai.Unavailable("no endpoint is ready")
	}
	return nil, last
}

// route picks and leases a replica for rq among the subset's endpoints, with
// the fallbacks after it. On failure it returns the outcome and the
// immediate response (an *openai.Error, or an *epp.Refusal that wraps one):
// 429 when every allowed replica is at its caps or shed_delay sheds the
// request (the protocol's shedding), 503 when none is ready.
func (p *eppPicker) route(rq *request, routeLabel string, sub *epp.Subset, sc *scratch) (*epp.Pick, string, error) {
	b := p.b
	m := rq.model
	snap := b.fleet.Snapshot()
	set := snap.Models[m.cfg.Name]
	if set == nil {
		return nil, outcomeNoReplica, openai.Unavailable("no healthy replica serves %s", m.cfg.Name)
	}
	ix := p.index(snap)
	prep := sc.preparedPrompt(rq)
	now := b.now()
	for {
		sc.exclude = sc.exclude[:0]
		for i, rep := range set.Replicas {
			if e := ix.of[rep]; e == "" || !sub.Allows(e) || containsReplica(sc.full, rep) {
				sc.exclude = append(sc.exclude, i)
			}
		}
		idx, d, ticket, ok, err := b.pick(rq, set, now, prep, sc, 1)
		if err != nil {
			if errors.Is(err, route.ErrOverloaded) {
				b.m.reasons.WithLabelValues(m.cfg.Name, string(d.Reason)).Inc()
				return nil, outcomeShed, &epp.Refusal{Err: openai.StatusError(http.StatusTooManyRequests,
					"every replica serving "+m.cfg.Name+" is too loaded to answer in time; retry later"), RetryAfter: d.RetryAfter}
			}
			if errors.Is(err, route.ErrAllFull) || (errors.Is(err, route.ErrNoCandidate) && len(sc.full) > 0) {
				return nil, outcomeFull, openai.StatusError(http.StatusTooManyRequests,
					"every replica serving "+m.cfg.Name+" is at its capacity; retry later")
			}
			if sub.Set {
				return nil, outcomeNoReplica, openai.Unavailable("no ready endpoint of the subset serves %s", m.cfg.Name)
			}
			return nil, outcomeNoReplica, openai.Unavailable("no healthy replica serves %s", m.cfg.Name)
		}
		rep := set.Replicas[idx]
		if !ok {
			sc.full = append(sc.full, rep) // lost a race for its last slot
			continue
		}
		if d.SummaryFallback {
			b.m.fallback.WithLabelValues(m.cfg.Name).Inc()
		}
		b.m.reasons.WithLabelValues(m.cfg.Name, string(d.Reason)).Inc()
		l := &eppLease{p: p, model: m, route: routeLabel, tokens: rq.tokens, output: rq.outputReserve(), estimated: rq.estimated, hashes: slices.Clone(rq.settleHashes()),
			cur: eppTarget{rep: rep, ticket: ticket, endpoint: ix.of[rep], cached: d.CachedTokens, uncached: d.UncachedTokens}}
		pk := &epp.Pick{Endpoints: []string{l.cur.endpoint}, Lease: l}
		if rq.id != "" {
			pk.Header = map[string]string{HeaderRequestID: rq.id}
		}
		for _, i := range fallbackOrder(m.policy.Name(), d, sc.cands, sc.exclude, idx, b.cfg.EPP.Fallbacks) {
			t := eppTarget{rep: set.Replicas[i], endpoint: ix.of[set.Replicas[i]], cached: d.CachedTokens, uncached: d.UncachedTokens}
			if d.Cached != nil && d.Cached[i] >= 0 {
				t.cached = int(d.Cached[i])
				t.uncached = max(d.CachedTokens+d.UncachedTokens-t.cached, 0)
			}
			l.alts = append(l.alts, t)
			pk.Endpoints = append(pk.Endpoints, t.endpoint)
		}
		return pk, "", nil
	}
}

// count records a request that got no pick.
func (p *eppPicker) count(model, routeLabel, outcome string) {
	p.b.m.requests.WithLabelValues(model, routeLabel, outcome, modeEPP).Inc()
}

// endpointIndex maps one snapshot's replicas to the endpoints a gateway
// knows them by, and back.
type endpointIndex struct {
	snap   *fleet.Snapshot
	of     map[*fleet.Replica]string // "": not addressable
	byAddr map[string]*fleet.Replica
}

// index returns the endpoint index of snap, built once per snapshot.
func (p *eppPicker) index(snap *fleet.Snapshot) *endpointIndex {
	if ix := p.idx.Load(); ix != nil && ix.snap == snap {
		return ix
	}
	ix := &endpointIndex{snap: snap, of: make(map[*fleet.Replica]string, len(snap.Replicas)),
		byAddr: make(map[string]*fleet.Replica, len(snap.Replicas))}
	for _, rep := range snap.Replicas {
		e := replicaEndpoint(rep, p.b.cfg.EPP.Endpoint)
		ix.of[rep] = e
		if e != "" {
			ix.byAddr[e] = rep
		}
	}
	p.idx.Store(ix)
	return ix
}

// replicaEndpoint is the host:port a gateway reaches rep at: its URL's (the
// sidecar's data address for a gossip replica), or with endpoint engine the
// engine port its sidecar advertises on the same host ("" when it
// advertises none). A static replica is its URL either way.
func replicaEndpoint(rep *fleet.Replica, endpoint string) string {
	host, port := rep.URL.Hostname(), rep.URL.Port()
	if port == "" {
		port = "80"
		if rep.URL.Scheme == "https" {
			port = "443"
		}
	}
	if endpoint == EPPEndpointEngine && !rep.Static {
		m := rep.Member()
		if m == nil || m.Meta.EnginePort == 0 {
			return ""
		}
		port = strconv.Itoa(int(m.Meta.EnginePort))
	}
	return net.JoinHostPort(host, port)
}
