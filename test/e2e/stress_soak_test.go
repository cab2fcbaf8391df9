//go:build stress

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// stSoakRequests is the soak's length: $INFERRAIL_SOAK_REQUESTS, default
// 1,000,000 (`make soak`).
func stSoakRequests(t *testing.T) int {
	if v := os.Getenv("INFERRAIL_SOAK_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10000 {
			t.Fatalf("INFERRAIL_SOAK_REQUESTS=%q: want an integer >= 10000", v)
		}
		return n
	}
	return 1_000_000
}

// stGoroutines reads the go_goroutines gauge of a node's admin page.
func stGoroutines(t *testing.T, admin string) float64 {
	t.Helper()
	return scMetric(t, &scSidecar{admin: admin}, "go_goroutines", "")
}

// TestSoak sends stSoakRequests requests through a balancer and four
// replicas. Between the end of the warm-up (the first 5%) and the end, no
// node's resident memory grows by more than 50 MB, and once the load has
// stopped every node's goroutine count returns to within 10 of what it was
// idle after the warm-up.
func TestSoak(t *testing.T) {
	total := stSoakRequests(t)
	bin := scBuild(t)
	f := btStartFleet(t, bin, 4, 4000, []string{"bal-soak"}, "--zero-latency")
	bal := f.bals[0]
	procs := []*scProc{bal.proc}
	admins := []string{bal.admin}
	for _, sc := range f.sidecars {
		procs = append(procs, sc.proc)
		admins = append(admins, sc.admin)
	}
	run := func(n int, tag string) stTally {
		load := stStartLoad(t, []string{bal.url}, 32, 0, stMix(tag))
		scWaitLong(t, fmt.Sprintf("%d soak requests", n), time.Duration(n/50+60)*time.Second, func() error {
			if got := len(load.done()); got < n {
				return fmt.Errorf("%d answered", got)
			}
			return nil
		})
		load.stop()
		return stCount(load.done(), nil)
	}
	idle := func() []float64 {
		out := make([]float64, len(admins))
		for i, a := range admins {
			out[i] = stGoroutines(t, a)
		}
		return out
	}
	warm := run(total/20, "warm")
	warmRSS := make([]int64, len(procs))
	for i, p := range procs {
		warmRSS[i] = stRSS(t, p)
	}
	warmG := idle()
	start := time.Now()
	main := run(total-total/20, "soak")
	elapsed := time.Since(start)
	var growth int64
	growths := map[string]int64{}
	for i, p := range procs {
		g := stRSS(t, p) - warmRSS[i]
		growths[fmt.Sprintf("%s-%d", p.name, i)] = g >> 20
		growth = max(growth, g)
	}
	var endG []float64
	scWait(t, "goroutines back to their idle count", func() error {
		endG = idle()
		for i := range endG {
			if endG[i] > warmG[i]+10 {
				return fmt.Errorf("%s: %v goroutines, %v idle after the warm-up", admins[i], endG[i], warmG[i])
			}
		}
		return nil
	})
	failed := warm.lostBeforeBegin + warm.brokeAfterBegin + main.lostBeforeBegin + main.brokeAfterBegin
	stRecord(t, stRow{Row: "12-soak", Fault: fmt.Sprintf("soak: %d requests through 1 balancer and 4 replicas", total),
		Result: fmt.Sprintf("%d failed; largest resident memory growth after the warm-up %d MB (limit 50); goroutines idle after %v, before %v; %.0f req/s",
			failed, growth>>20, endG, warmG, float64(main.ok)/elapsed.Seconds()),
		Figures: map[string]any{"requests": total, "failed": failed, "rss_growth_mb": growths, "goroutines_before": warmG,
			"goroutines_after": endG, "rate": int(float64(main.ok) / elapsed.Seconds())}})
	if failed > 0 {
		t.Errorf("%d soak requests failed: %v %v", failed, warm.errs, main.errs)
	}
	if growth > 50<<20 {
		t.Errorf("resident memory grew by %d MB (%v MB per process), limit 50", growth>>20, growths)
	}
}

// scWaitLong is scWait with a longer hang guard, for the soak.
func scWaitLong(t *testing.T, what string, guard time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(guard)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s: %v", what, err)
		}
		<-tick.C
	}
}
