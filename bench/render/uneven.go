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
// 555 ms, docs/bench.md). That median is not a fleet faster everywhere,
// and a rule that keeps the tail down gives it up.
func unevenMedian(own, rival *Group) (string, bool) {
	if own.p50() <= rival.p50() || own.p99() > rival.p99() {
		return "", false
	}
	lo, hi := replicaMedians(rival)
	olo, ohi := replicaMedians(own)
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

// replicaMedians returns the mean over repetitions of the fastest and of
// the slowest replica's median TTFT of its measured requests, in ms (0, 0
// without per-request replicas).
func replicaMedians(g *Group) (lo, hi float64) {
	for _, r := range g.Reps {
		by := map[string][]time.Duration{}
		for i := range r.Records {
			rec := &r.Records[i]
			if rec.Warmup || !rec.OK() || rec.Replica == "" {
				continue
			}
			by[rec.Replica] = append(by[rec.Replica], rec.TTFT)
		}
		if len(by) == 0 {
			return 0, 0
		}
		rlo, rhi := math.Inf(1), 0.0
		for _, ts := range by {
			m := bench.NewDist(ts).P50
			rlo, rhi = math.Min(rlo, m), math.Max(rhi, m)
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
		type tally struct {
			ttfts          []time.Duration
			prompt, cached int
		}
		by := map[string]*tally{}
		for i := range r.Records {
			rec := &r.Records[i]
			if rec.Warmup || !rec.OK() || rec.Replica == "" {
				continue
			}
			t := by[rec.Replica]
			if t == nil {
				t = &tally{}
				by[rec.Replica] = t
			}
			t.ttfts = append(t.ttfts, rec.TTFT)
			t.prompt += rec.PromptTokens
			t.cached += rec.CachedTokens
		}
		var best *tally
		bestMedian := math.Inf(1)
		for _, t := range by {
			if m := bench.NewDist(t.ttfts).P50; m < bestMedian {
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
