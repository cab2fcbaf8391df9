package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Predicts reports whether policy predicts cached tokens: the cache-blind
// baselines, prefix_hash (placement by hash, no prediction) and nginx send
// no x-inferrail-cached-tokens or 0, so prediction accuracy does not apply.
func Predicts(policy string) bool {
	switch policy {
	case "round_robin", "random", "least_request", "p2c", "prefix_hash", "nginx-round_robin", "nginx-least_conn":
		return false
	}
	return true
}

// WriteTable prints one line per result: the headline numbers of a
// comparison (TTFT p50/p99, TPOT p50, hit rate from usage and the engines,
// its share of the pooled-LRU bound, prediction accuracy, goodput).
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\trequests\tfailed\tTTFT p50 ms\tTTFT p99 ms\tTPOT p50 ms\thit rate\tengine hit\t% of H_pool\tpredicted exact\tgoodput/s\tgood %\t")
	for _, r := range results {
		s := r.Summary
		pool, pred, hit := "-", "-", "-"
		if s.Usage > 0 || s.HitRateUsage > 0 {
			hit = fmt.Sprintf("%.3f", s.HitRateUsage)
			if r.Bounds != nil && r.Bounds.HPoolLRU > 0 {
				pool = fmt.Sprintf("%.0f%%", 100*s.HitRateUsage/r.Bounds.HPoolLRU)
			}
		}
		if !Predicts(r.Run.Policy) {
			pred = "n/a"
		} else if s.Predicted > 0 {
			pred = fmt.Sprintf("%.1f%%", 100*s.PredictionExact)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.1f\t%s\t%.3f\t%s\t%s\t%.2f\t%.1f\t\n", r.Config.Label, s.Requests, s.Failed,
			s.TTFT.P50, s.TTFT.P99, s.TPOT.P50, hit, s.HitRateEngine, pool, pred, s.Goodput, 100*s.GoodFraction)
	}
	if len(results) > 0 && results[0].Bounds != nil {
		b := results[0].Bounds
		fmt.Fprintf(tw, "\nbounds (%d × %d blocks):\tH_inf %.3f\tH_pool LRU %.3f\tH_pool Belady %.3f\toffline replay %.3f\t\n", b.Replicas, b.CacheBlocks, b.HInf, b.HPoolLRU, b.HPoolBelady, b.HOracle)
	}
	return tw.Flush()
}
