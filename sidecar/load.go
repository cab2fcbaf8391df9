package sidecar

import (
	"time"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// LoadStatus is what the sidecar knows of its engine's load: the engine's
// own numbers from its last scrape and the data path's exact counts. It is
// the input of the load.Report the sidecar announces (Report) and what
// GET /v1/load shows. When Readable is false the engine's numbers are
// unknown (never zero): receivers must not take the replica for idle.
type LoadStatus struct {
	// Readable reports whether the last scrape was read.
	Readable bool `json:"readable"`
	// Err says why the load is unreadable.
	Err string `json:"err,omitempty"`
	// Engine is the load read from the engine's metrics page; while not
	// Readable it is the last readable scrape's (see ScrapedAt).
	Engine engine.Load `json:"engine"`
	// DataPath are the sidecar's own exact counts.
	DataPath DataPathCounts `json:"data_path"`
	// ScrapedAt is when the engine's numbers were read (zero before the
	// first readable scrape).
	ScrapedAt time.Time `json:"scraped_at"`
	// UnscrapedKVTokens is the KV memory, in tokens, the data path saw taken
	// and freed since the scrape that read Engine began: plus the uncached
	// prompt tokens of every stream whose first token came since (unless
	// the engine already counted it running), minus those of every request
	// in memory that ended since. Engine.KVUsage lags the engine by up to a
	// scrape interval; this is what it lacks (KVUsage).
	UnscrapedKVTokens int64 `json:"unscraped_kv_tokens"`
	// KVCapacityTokens is the engine's KV capacity in tokens (0: unknown):
	// its blocks times its block size.
	KVCapacityTokens int64 `json:"kv_capacity_tokens"`
	// HeldBlocks is the KV blocks the engine holds in GPU memory now, by the
	// block set the summary is built from (load.Report.HeldBlocks).
	HeldBlocks int64 `json:"blocks_held"`
}

// KVUsage returns the KV usage the sidecar reports: the engine's from its
// last readable scrape, corrected by what the data path saw change since
// (UnscrapedKVTokens), within [0, 1]. Without a known capacity it is the
// engine's alone. Uncorrected, a replica that just started many streams
// looks as roomy as before them until the next scrape, and a balancer's KV
// memory bound sends it more (docs/routing.md#the-bound-on-work).
func (s LoadStatus) KVUsage() float64 {
	u := s.Engine.KVUsage
	if s.KVCapacityTokens > 0 {
		u += float64(s.UnscrapedKVTokens) / float64(s.KVCapacityTokens)
	}
	return min(max(u, 0), 1)
}

// Report returns the load report the sidecar announces over the gossip. A
// report has no "unknown" flag: while the engine's page is unreadable the
// data path's exact counts (a lower bound of the engine's work when all
// traffic goes through the sidecar) stand in for the engine's, never zeros
// from a failed scrape, and the KV usage keeps its last known value (Engine
// holds the last readable scrape). The gossip carries at most
// gossip.MaxOrigins origins, the largest first.
func (s LoadStatus) Report() load.Report {
	d := &s.DataPath
	r := load.Report{
		InFlight: max(d.InFlight, 0), Pending: max(d.Prefilling, 0), PrefillTokens: max(d.WaitingPrefillTokens, 0),
		KVUsage: s.KVUsage(), HeldBlocks: max(s.HeldBlocks, 0),
	}
	if n := min(len(d.Origins), gossip.MaxOrigins); n > 0 {
		r.Origins = make([]load.Share, n)
		for i, o := range d.Origins[:n] {
			r.Origins[i] = load.Share{Origin: o.Origin, InFlight: max(o.InFlight, 0), Pending: max(o.Prefilling, 0),
				PrefillTokens: max(o.PrefillTokens, 0)}
		}
	}
	if s.Readable {
		r.Running, r.Waiting = max(int64(s.Engine.Running), 0), max(int64(s.Engine.Waiting), 0)
	} else {
		r.Running, r.Waiting = max(d.InFlight-d.Prefilling, 0), max(d.Prefilling, 0)
	}
	return r
}

// headerReport returns the load report for a response to origin: the data
// path's counts over every origin, origin's share of them, and the engine's
// numbers by the rule of the gossiped one (LoadStatus.Report), so the two
// reports a balancer combines never disagree about an engine whose page is
// unreadable.
func (p *proxy) headerReport(origin string) string {
	total, own := p.counts.Origin(origin)
	var st LoadStatus
	if p.engineStatus != nil {
		st = p.engineStatus()
	}
	st.DataPath = total
	r := st.Report()
	r.Origins = nil
	share := load.Share{Origin: origin, InFlight: own.InFlight, Pending: own.Prefilling, PrefillTokens: max(own.PrefillTokens, 0)}
	return load.EncodeHeader(r, share)
}
