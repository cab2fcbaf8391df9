package fleet

import (
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/loadreport"
)

// ModelSet is the replicas serving one model and their routing candidates.
type ModelSet struct {
	Model string
	// Replicas lists the replicas, sorted by ID; Candidates fills candidate
	// i from Replicas[i].
	Replicas []*Replica
	base     []route.Candidate
	origin   string // Config.Origin
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
// replica's last response to this balancer (route.Load). It allocates only
// when dst is too small.
func (m *ModelSet) Candidates(now time.Time, dst []route.Candidate) []route.Candidate {
	dst = append(dst[:0], m.base...)
	for i, r := range m.Replicas {
		c := &dst[i]
		c.Healthy = r.Healthy(now)
		c.TTFTScale = r.observedTTFTScale()
		mem := r.member.Load()
		var gossipAt time.Time
		if mem != nil {
			if lr, fresh, ok := mem.Load(now); ok {
				c.Load = gossipLoad(&lr.Load, m.origin)
				c.Load.Stale, c.Load.At = !fresh, lr.ReceivedAt
				gossipAt = lr.ReceivedAt
			}
		}
		if rr := r.report.Load(); rr != nil && rr.at.After(gossipAt) {
			c.Load = responseLoad(&rr.r)
			c.Load.At = rr.at
		}
		if mem == nil {
			continue
		}
		v, fresh := mem.Summary(now)
		if v.Info().Valid {
			c.Prefix = (*gpuView)(v)
			c.SummaryStale = !fresh
			c.SummaryAt = mem.SummaryConfirmedAt()
		}
	}
	return dst
}

// gossipLoad maps a gossiped load onto route.Load, taking this balancer's
// share (origin) out of the sidecar's counts.
func gossipLoad(l *gossip.Load, origin string) route.Load {
	own := l.Origin(origin)
	return route.Load{
		Known: true, Exact: true,
		Running: int(l.Running), Waiting: int(l.Waiting), InFlight: int(l.InFlight), KVUsage: float64(l.KVCacheUsage),
		Others: route.Work{
			InFlight:      max(int(l.InFlight)-int(own.InFlight), 0),
			Pending:       max(int(l.Pending)-int(own.Pending), 0),
			PrefillTokens: max(int64(l.WaitingPrefillTokens)-int64(own.PrefillTokens), 0),
		},
		Unseen: max(int(l.Waiting)-int(l.Pending), 0),
	}
}

// responseLoad maps a response's load report onto route.Load.
func responseLoad(r *loadreport.Report) route.Load {
	return route.Load{
		Known: true, Exact: true,
		Running: int(r.Running), Waiting: int(r.Waiting), InFlight: int(r.InFlight), KVUsage: r.KVUsage,
		Others: route.Work{
			InFlight:      int(max(r.InFlight-r.OwnInFlight, 0)),
			Pending:       int(max(r.Prefilling-r.OwnPrefilling, 0)),
			PrefillTokens: max(r.PrefillTokens-r.OwnPrefillTokens, 0),
		},
		Unseen: int(max(r.Waiting-r.Prefilling, 0)),
	}
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
