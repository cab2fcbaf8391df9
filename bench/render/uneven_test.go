package render

import (
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
)

// A rival whose median comes from an uneven fleet (fast replicas holding
// its cache, one queueing) is named so, with both policies' replica
// medians and the fastest replica's hit rate against the others'; not
// when the rival's replicas are even, nor when the rival's tail is the
// lower or its median the higher.
func TestDiagnoseUnevenMedian(t *testing.T) {
	group := func(label string, p50, p99 float64, ttfts map[string][]time.Duration) *Group {
		r := &bench.Result{}
		for replica, ts := range ttfts {
			for i, ttft := range ts {
				cached := 40 // replica a keeps more of its contexts
				if replica == "a" {
					cached = 60
				}
				r.Records = append(r.Records, bench.Record{Replica: replica, Scheduled: time.Duration(i) * time.Second, TTFT: ttft, E2E: ttft + time.Second, Status: 200,
					PromptTokens: 100, CachedTokens: cached})
			}
		}
		r.Summary.TTFT = bench.Dist{N: len(r.Records), P50: p50, P99: p99}
		return &Group{Label: label, Run: bench.RunInfo{Policy: label}, Reps: []*bench.Result{r}}
	}
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	even := map[string][]time.Duration{"a": ms(90, 100, 110), "b": ms(95, 105, 120)}
	uneven := map[string][]time.Duration{"a": ms(40, 49, 60), "b": ms(400, 563, 900)}
	const want = "sglang_cache_aware's replicas' TTFT medians 49–563 ms (cost_model 100–105 ms): an uneven fleet" +
		" whose fast replicas hold its median while one queues (its fastest replica's hit rate 0.60, the others' 0.40: contexts kept there)"
	if got := diagnose(group("cost_model", 98, 900, even), group("sglang_cache_aware", 75, 1900, uneven), 2); !strings.Contains(got, want) {
		t.Errorf("diagnose() lacks %q: %s", want, got)
	}
	if got := diagnose(group("cost_model", 98, 900, even), group("sglang_cache_aware", 75, 1900, even), 2); strings.Contains(got, "uneven") {
		t.Errorf("an even rival called uneven: %s", got)
	}
	if got := diagnose(group("cost_model", 98, 2000, even), group("sglang_cache_aware", 75, 1900, uneven), 2); strings.Contains(got, "uneven") {
		t.Errorf("an uneven rival with the higher tail explains a loss it does not: %s", got)
	}
	if got := diagnose(group("cost_model", 70, 900, even), group("sglang_cache_aware", 75, 1900, uneven), 2); strings.Contains(got, "uneven") {
		t.Errorf("an uneven rival with the higher median explains a loss it does not: %s", got)
	}
}

// A rival's higher share of requests within the SLO is put down to an
// uneven fleet when its replicas' shares spread wider than own's: one
// replica queueing far past the SLO while the others stay nearer. An even
// rival, a rival own beats on goodput, or one spread no wider is not.
func TestDiagnoseUnevenGoodput(t *testing.T) {
	slo := bench.SLO{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}
	// group gives each replica ten answered requests, good of them within
	// the SLO and the rest at 3 s, in a cell at 1.5x (load).
	load := 1.5
	group := func(label string, good map[string]int) *Group {
		r := &bench.Result{}
		r.Config.SLO = slo
		n := 0
		for replica, g := range good {
			for i := range 10 {
				ttft := 500 * time.Millisecond
				if i >= g {
					ttft = 3 * time.Second
				} else {
					n++
				}
				r.Records = append(r.Records, bench.Record{Replica: replica, Scheduled: time.Duration(i) * time.Second, TTFT: ttft,
					TPOT: 10 * time.Millisecond, E2E: ttft + time.Second, Status: 200, PromptTokens: 100})
			}
		}
		r.Summary.Requests, r.Summary.GoodFraction = len(r.Records), float64(n)/float64(len(r.Records))
		r.Summary.TTFT = bench.Dist{N: len(r.Records), P50: 500, P99: 3000}
		return &Group{Label: label, Run: bench.RunInfo{Policy: label, Load: load}, Reps: []*bench.Result{r}}
	}
	even := map[string]int{"a": 7, "b": 7}
	const want = "sglang_cache_aware's replicas met the SLO for 60–90% of their requests (cost_model 70–70%)"
	if got := diagnose(group("cost_model", even), group("sglang_cache_aware", map[string]int{"a": 9, "b": 6}), 2); !strings.Contains(got, want) {
		t.Errorf("diagnose() lacks %q: %s", want, got)
	}
	for name, c := range map[string]struct{ own, rival map[string]int }{
		"an even rival":           {even, map[string]int{"a": 8, "b": 8}},
		"a rival with fewer good": {map[string]int{"a": 8, "b": 8}, map[string]int{"a": 9, "b": 6}},
		"a rival spread no wider": {map[string]int{"a": 9, "b": 5}, map[string]int{"a": 9, "b": 6}},
	} {
		if got := diagnose(group("cost_model", c.own), group("sglang_cache_aware", c.rival), 2); strings.Contains(got, "met the SLO") {
			t.Errorf("%s called uneven: %s", name, got)
		}
	}
	// At round robin's capacity or below no replica need be overloaded, so
	// the same spread is no reason.
	for _, load = range []float64{1, 0.5, 0} {
		if got := diagnose(group("cost_model", even), group("sglang_cache_aware", map[string]int{"a": 9, "b": 6}), 2); strings.Contains(got, "met the SLO") {
			t.Errorf("at load %v called uneven past capacity: %s", load, got)
		}
	}
}
