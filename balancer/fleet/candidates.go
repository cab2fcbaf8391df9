package fleet

import (
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
)

// ModelSet is the replicas serving one model and their routing candidates.
type ModelSet struct {
	Model string
	// Replicas lists the replicas, sorted by ID; Candidates fills candidate
	// i from Replicas[i].
	Replicas []*Replica
	base     []route.Candidate
	origin   string // Config.Origin
	// loadMaxAge is Config.LoadMaxAge.
	loadMaxAge time.Duration
	peers      *peerState // the fleet's
}

// build fills the candidates' immutable fields.
func (m *ModelSet) build() {
	m.base = make([]route.Candidate, len(m.Replicas))
	for i, r := range m.Replicas {
		m.base[i] = route.Candidate{
			ID: r.ID, Models: r.Models, Weight: r.Weight,
			MaxConcurrency: r.MaxConcurrency, MaxPending: r.MaxPending,
			Own: &r.Counters, BlockSize: r.BlockSize, CapacityBlocks: r.CapacityBlocks,
		}
	}
	route.Prepare(m.base)
}

// Candidates appends to dst[:0] the routing candidates at now: the immutable
// fields plus the replica's current health, load, TTFT correction and
// summary. The load is the newer of the gossiped report and the report of the
// replica's last response to this balancer, as the sidecar wrote it, with this
// balancer's share beside it (route.Load); either is stale once older than
// the gossip's load_max_age (Config.LoadMaxAge; the gossip also marks a
// member's announcement stale once the member is not alive). Where other
// balancers send their own counts (peers.go), the candidate carries theirs
// (route.Load.Peers) and the rest of the report's (Load.Residual). It
// allocates only when dst is too small.
func (m *ModelSet) Candidates(now time.Time, dst []route.Candidate) []route.Candidate {
	dst = append(dst[:0], m.base...)
	var buf [8]*peer
	var fresh []*peer
	if m.peers != nil {
		fresh = m.peers.fresh(now, m.loadMaxAge, buf[:0])
	}
	for i, r := range m.Replicas {
		c := &dst[i]
		c.Healthy = r.Healthy(now)
		c.TTFTScale = r.observedTTFTScale()
		mem := r.member.Load()
		var gossipAt time.Time
		var residual route.Work
		if mem != nil {
			if a, freshLoad, ok := mem.Load(now); ok {
				c.Load = route.Load{Report: a.Load, Own: a.Load.Share(m.origin), Known: true, Exact: true, Stale: !freshLoad}
				gossipAt = a.ReceivedAt
				residual = others(&a.Load, m.origin, fresh)
			}
		}
		if rr := r.report.Load(); rr != nil && rr.at.After(gossipAt) {
			c.Load = route.Load{Report: rr.r, Own: rr.own, Known: true, Exact: true, Stale: now.Sub(rr.at) > m.loadMaxAge}
			if gossipAt.IsZero() {
				// No breakdown by origin: the peers' counts now stand for
				// as much of the others' work in the report.
				residual = c.Load.Others()
			}
		}
		if len(fresh) > 0 {
			c.Load.HasPeers = true
			c.Load.Peers = r.peerLoad(now, m.loadMaxAge)
			c.Load.PeerAnswers = r
			if gossipAt.IsZero() {
				residual.InFlight = max(residual.InFlight-c.Load.Peers.InFlight, 0)
				residual.Pending = max(residual.Pending-c.Load.Peers.Pending, 0)
				residual.PrefillTokens = max(residual.PrefillTokens-c.Load.Peers.PrefillTokens, 0)
			}
			c.Load.Residual = residual
		}
		if mem == nil {
			continue
		}
		v, fresh := mem.Summary(now)
		if v.Info().Valid {
			c.Prefix = (*gpuView)(v)
			c.SummaryStale = !fresh
		}
	}
	return dst
}

// gpuView adapts a summary view to route.PrefixIndex for the GPU medium. A
// pointer conversion, so building a candidate does not allocate.
type gpuView summary.View

// LongestPrefix returns the number of leading hashes the GPU filter holds.
func (g *gpuView) LongestPrefix(hashes []kvblock.Hash) int {
	return (*summary.View)(g).LongestPrefix(hashes, summary.MediumGPU)
}

// LongestPrefixOf answers from a prepared *summary.Prompt (route.PromptIndex):
// the same result as LongestPrefix, without hashing or allocating. Any other
// kind of preparation is declined.
func (g *gpuView) LongestPrefixOf(p route.PreparedPrompt) (int, bool) {
	sp, ok := p.(*summary.Prompt)
	if !ok || sp == nil {
		return 0, false
	}
	return (*summary.View)(g).LongestPrefixOf(sp, summary.MediumGPU), true
}

var _ route.PromptIndex = (*gpuView)(nil)

// Prompt prepares a request's block hashes for the replicas' gossiped
// summaries (route.PromptPreparer): their filters' bloom positions, computed
// once per request for every candidate (gpuView.LongestPrefixOf answers from
// them). The zero value is ready; it reuses its storage across requests.
type Prompt struct{ p summary.Prompt }

// Prepare prepares hashes for the summaries' filters; the result is valid
// until the next Prepare.
func (p *Prompt) Prepare(hashes []kvblock.Hash) route.PreparedPrompt {
	p.p.Reset(hashes, summary.DefaultHashFuncs)
	return &p.p
}

// Len returns the number of blocks last prepared.
func (p *Prompt) Len() int { return p.p.Len() }

var _ route.PromptPreparer = (*Prompt)(nil)
