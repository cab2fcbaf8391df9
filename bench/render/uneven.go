package render

import (
	"fmt"
	"math"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// unevenMedian says whether rival's lower median comes from an uneven
// fleet: its replicas' median TTFTs (the mean over repetitions of the
// fastest and of the slowest replica's) lie at least unevenRatio apart, at
// least twice as far as own's, while own's median is the higher and its
// p99 no worse. Requests that stay with their cache pile up where it is;
// a replica that got fewer of them keeps its contexts and answers fast,
// and its requests hold the fleet's median while another replica queues
// (W2 at 1x, one repetition: sglang_cache_aware's replicas' medians 49 and
// 555 ms, docs/bench-findings.md). That median is not a fleet faster everywhere,
// and a rule that keeps the tail down gives it up.
func unevenMedian(own, rival *Group) (string, bool) {
	if own.p50() <= rival.p50() || own.p99() > rival.p99() {
		return "", false
	}
	lo, hi := replicaRange(rival, replicaMedian)
	olo, ohi := replicaRange(own, replicaMedian)
	if lo <= 0 || olo <= 0 || hi < unevenRatio*lo || hi/lo < 2*ohi/olo {
		return "", false
	}
	text := fmt.Sprintf("%s's replicas' TTFT medians %.0f–%.0f ms (%s %.0f–%.0f ms): an uneven fleet whose fast replicas hold its median while one queues",
		rival.Label, lo, hi, own.Label, olo, ohi)
	if fast, rest, ok := fastestReplicaHits(rival); ok && fast >= rest+0.05 {
		text += fmt.Sprintf(" (its fastest replica's hit rate %.2f, the others' %.2f: contexts kept there)", fast, rest)
	}
	return text, true
}

// unevenRatio is how far apart the fastest and the slowest replica's median
// TTFTs must lie for unevenMedian.
const unevenRatio = 3

// unevenGoodput says whether rival's higher share of requests within the
// SLO, in a cell past round robin's capacity (RunInfo.Load above 1), comes
// from an uneven fleet: the share of each replica's requests that met the
// SLO (the mean over repetitions of the highest and of the lowest
// replica's) spreads at least unevenGoodSpread wider than own's. At or
// below capacity the reasoning below does not hold (no replica need be
// overloaded), so it says nothing there.
// Past capacity a replica's queue grows through the run: one overloaded ρ
// times (arrivals over what it serves) passes a TTFT SLO of S after about
// S/(ρ−1) seconds, so over a run of T seconds a share of about
// S/((ρ−1)·T) of its requests meets it. That share falls ever more slowly
// as ρ grows (the requests within the SLO, ρ/(ρ−1) times what the replica
// serves in S, are convex in ρ), so a fleet that overloads one replica more
// and the others less keeps more requests within the SLO than one whose
// replicas are overloaded alike, at the cost of the tail: the most
// overloaded replica's requests wait longest (W2 at 1.5x:
// sglang_cache_aware's replicas 62–77% within the SLO, cost_model's 66–69%,
// bench/results/PROVENANCE.md).
func unevenGoodput(own, rival *Group) (string, bool) {
	if own.good() >= rival.good() || own.Run.Load <= 1 || rival.Run.Load <= 1 {
		return "", false
	}
	lo, hi := replicaRange(rival, replicaGood)
	olo, ohi := replicaRange(own, replicaGood)
	if hi <= 0 || ohi <= 0 || (hi-lo)-(ohi-olo) < unevenGoodSpread {
		return "", false
	}
	return fmt.Sprintf("%s's replicas met the SLO for %.0f–%.0f%% of their requests (%s %.0f–%.0f%%): past capacity a fleet whose replicas are overloaded unevenly keeps more requests within the SLO, as a queue's late share grows ever more slowly with its overload, and pays in the tail where one queues longest",
		rival.Label, 100*lo, 100*hi, own.Label, 100*olo, 100*ohi), true
}

// unevenGoodSpread is how much wider than own's the spread of rival's
// replicas' shares of requests within the SLO must be for unevenGoodput.
const unevenGoodSpread = 0.05

// replicaTally is one replica's measured requests in one repetition.
type replicaTally struct {
	ttfts          []time.Duration // of the answered requests
	requests, good int             // measured, and of them within the SLO
	prompt, cached int             // the answered requests' tokens
}

// byReplica tallies r's measured requests by replica (empty without
// per-request replicas).
func byReplica(r *bench.Result) map[string]*replicaTally {
	by := map[string]*replicaTally{}
	for i := range r.Records {
		rec := &r.Records[i]
		if rec.Warmup || rec.Replica == "" {
			continue
		}
		t := by[rec.Replica]
		if t == nil {
			t = &replicaTally{}
			by[rec.Replica] = t
		}
		t.requests++
		if !rec.OK() {
			continue
		}
		if r.Config.SLO.Met(rec) {
			t.good++
		}
		t.ttfts = append(t.ttfts, rec.TTFT)
		t.prompt += rec.PromptTokens
		t.cached += rec.CachedTokens
	}
	return by
}

// replicaMedian is a replica's median TTFT in ms (NaN: none answered).
func replicaMedian(t *replicaTally) float64 {
	if len(t.ttfts) == 0 {
		return math.NaN()
	}
	return bench.NewDist(t.ttfts).P50
}

// replicaGood is a replica's share of requests within the SLO.
func replicaGood(t *replicaTally) float64 { return float64(t.good) / float64(t.requests) }

// replicaRange returns the mean over repetitions of the lowest and of the
// highest f of any replica (0, 0 without per-request replicas); a replica
// whose f is NaN is left out.
func replicaRange(g *Group, f func(*replicaTally) float64) (lo, hi float64) {
	for _, r := range g.Reps {
		by := byReplica(r)
		if len(by) == 0 {
			return 0, 0
		}
		rlo, rhi := math.Inf(1), math.Inf(-1)
		for _, t := range by {
			if v := f(t); !math.IsNaN(v) {
				rlo, rhi = math.Min(rlo, v), math.Max(rhi, v)
			}
		}
		if math.IsInf(rlo, 1) {
			return 0, 0
		}
		lo += rlo
		hi += rhi
	}
	n := float64(len(g.Reps))
	return lo / n, hi / n
}

// fastestReplicaHits returns the mean over repetitions of the hit rate
// (cached over prompt tokens) of the replica with the lowest median TTFT
// and of the other replicas together; ok false without per-request
// replicas and usage.
func fastestReplicaHits(g *Group) (fast, rest float64, ok bool) {
	for _, r := range g.Reps {
		by := byReplica(r)
		var best *replicaTally
		bestMedian := math.Inf(1)
		for _, t := range by {
			if m := replicaMedian(t); m < bestMedian {
				best, bestMedian = t, m
			}
		}
		var rp, rc int
		for _, t := range by {
			if t != best {
				rp += t.prompt
				rc += t.cached
			}
		}
		if best == nil || best.prompt == 0 || rp == 0 {
			return 0, 0, false
		}
		fast += float64(best.cached) / float64(best.prompt)
		rest += float64(rc) / float64(rp)
	}
	n := float64(len(g.Reps))
	return fast / n, rest / n, n > 0
}
