package bench

import (
	"math"
	"slices"
	"time"
)

// Dist summarises a latency distribution in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}

// NewDist summarises xs (which it sorts).
func NewDist(xs []time.Duration) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += ms(x)
	}
	return Dist{N: len(xs), Mean: sum / float64(len(xs)), P50: ms(Quantile(xs, 0.5)), P90: ms(Quantile(xs, 0.9)),
		P99: ms(Quantile(xs, 0.99)), Max: ms(xs[len(xs)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Quantile returns the nearest-rank q-quantile of sorted xs (0 when empty).
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Summary aggregates the measured (non-warm-up) requests of a run.
type Summary struct {
	// Requests counts measured requests; Failed those that did not complete;
	// Cut those answered until the harness's drain deadline cut them
	// (Record.Cut, not failed).
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	Cut      int `json:"cut,omitempty"`
	// Window is the measured span: first measured scheduled time to the last
	// measured request's end.
	Window time.Duration `json:"window_ns"`
	TTFT   Dist          `json:"ttft"`
	TPOT   Dist          `json:"tpot"`
	ITL    Dist          `json:"itl"`
	E2E    Dist          `json:"e2e"`
	// SendLag is how late requests left after their scheduled time.
	SendLag Dist `json:"send_lag"`
	// RequestsPerSec and OutputTokensPerSec are completed work over Window.
	RequestsPerSec     float64 `json:"requests_per_s"`
	OutputTokensPerSec float64 `json:"output_tokens_per_s"`
	// Goodput is requests that met the SLO per second of arrivals: over the
	// span of the measured requests' send times (Window when they were all
	// sent at once), so that runs of one arrival plan that all met the SLO
	// have one goodput however long their last answer took. GoodFraction is
	// the share of measured requests that met it.
	Goodput      float64 `json:"goodput_per_s"`
	GoodFraction float64 `json:"good_fraction"`
	// HitRateUsage is Σ cached / Σ prompt tokens from usage, over the
	// measured requests whose usage arrived (Usage of them).
	HitRateUsage float64 `json:"hit_rate_usage"`
	// Usage counts the measured requests whose usage arrived: a stream the
	// drain deadline cut has none, so a run whose every stream was cut
	// (the ladder at 1.5x: 1,000-token answers longer than its drain) has
	// no hit rate from usage, not a hit rate of 0.
	Usage int `json:"usage,omitempty"`
	// HitRateEngine is hits / queries of the engines' counters from the end
	// of the warm-up to the end of the run; 0 when not scraped.
	HitRateEngine float64 `json:"hit_rate_engine"`
	// PredictionExact is the share of requests whose predicted cached tokens
	// equal the engine's; PredictionMAE the mean absolute error in tokens;
	// Predicted counts requests that carried both numbers.
	Predicted       int     `json:"predicted"`
	PredictionExact float64 `json:"prediction_exact"`
	PredictionMAE   float64 `json:"prediction_mae_tokens"`
	// ReplicaShare is each replica's share of measured requests.
	ReplicaShare map[string]float64 `json:"replica_share,omitempty"`
}

// Summarize computes the summary of records against slo.
func Summarize(records []Record, slo SLO) Summary {
	var (
		s                              Summary
		ttft, tpot, itl, e2e, lag      []time.Duration
		first, last, end               time.Duration = -1, 0, 0
		good, outTokens, prompt, cache int
		absErr                         float64
		exact                          int
		replicas                       = map[string]int{}
	)
	for i := range records {
		r := &records[i]
		if r.Warmup {
			continue
		}
		s.Requests++
		if first < 0 || r.Scheduled < first {
			first = r.Scheduled
		}
		last = max(last, r.Scheduled)
		end = max(end, r.Scheduled+r.E2E)
		lag = append(lag, r.SendLag)
		if r.Replica != "" {
			replicas[r.Replica]++
		}
		if !r.OK() {
			s.Failed++
			continue
		}
		if r.Cut {
			s.Cut++
		}
		ttft = append(ttft, r.TTFT)
		e2e = append(e2e, r.E2E)
		if r.CompletionTokens > 1 {
			tpot = append(tpot, r.TPOT)
		}
		itl = append(itl, r.ITL...)
		outTokens += r.CompletionTokens
		prompt += r.PromptTokens
		if r.PromptTokens > 0 {
			s.Usage++
		}
		if r.CachedReported {
			cache += r.CachedTokens
		}
		if slo.Met(r) {
			good++
		}
		if r.PredictedReported && r.CachedReported {
			s.Predicted++
			d := r.PredictedCached - r.CachedTokens
			if d == 0 {
				exact++
			}
			absErr += math.Abs(float64(d))
		}
	}
	s.TTFT, s.TPOT, s.ITL, s.E2E, s.SendLag = NewDist(ttft), NewDist(tpot), NewDist(itl), NewDist(e2e), NewDist(lag)
	if first >= 0 && end > first {
		s.Window = end - first
		secs := s.Window.Seconds()
		s.RequestsPerSec = float64(len(ttft)) / secs
		s.OutputTokensPerSec = float64(outTokens) / secs
		s.Goodput = float64(good) / secs
		if last > first {
			s.Goodput = float64(good) / (last - first).Seconds()
		}
	}
	if s.Requests > 0 {
		s.GoodFraction = float64(good) / float64(s.Requests)
	}
	if prompt > 0 {
		s.HitRateUsage = float64(cache) / float64(prompt)
	}
	if s.Predicted > 0 {
		s.PredictionExact = float64(exact) / float64(s.Predicted)
		s.PredictionMAE = absErr / float64(s.Predicted)
	}
	if len(replicas) > 0 {
		s.ReplicaShare = map[string]float64{}
		for k, v := range replicas {
			s.ReplicaShare[k] = float64(v) / float64(s.Requests)
		}
	}
	return s
}
