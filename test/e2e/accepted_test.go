package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestAcceptedWorkIsFinished checks, through the real binaries, that work an
// engine has accepted is finished where it is: a non-streaming generation
// longer than the balancer's first-byte timeout (2 s here) is neither timed
// out, nor re-run elsewhere, nor counted against its replica; and a sidecar's
// graceful drain lets its running non-streaming request finish instead of
// the balancer moving it (the sidecar says 102 Processing once the engine
// runs the request).
func TestAcceptedWorkIsFinished(t *testing.T) {
	bin := scBuild(t)
	// 10 ms decode steps: 300 tokens take at least 3 s.
	f := btStartFleet(t, bin, 2, 4000, []string{"bal-acc"}, "--weight-floor", "10ms")
	bal := f.bals[0]
	prompts := func() []float64 {
		var v []float64
		for _, s := range f.sims {
			v = append(v, scMetric(t, &scSidecar{admin: s.url}, "vllm:prompt_tokens_total", ""))
		}
		return v
	}

	t.Run("longer than the first-byte timeout", func(t *testing.T) {
		before := prompts()
		r := btComplete(bal.url, "a short question that gets a long answer", 300)
		if r.err != nil || r.status != 200 {
			t.Fatalf("long non-streaming request: %d %v", r.status, r.err)
		}
		if n := btMetric(t, bal, "inferrail_balancer_retries_total", ""); n != 0 {
			t.Errorf("%v retries, want none", n)
		}
		if n := btMetric(t, bal, "inferrail_balancer_ejections_total", ""); n != 0 {
			t.Errorf("%v ejections, want none", n)
		}
		after := prompts()
		ran := 0
		for i := range after {
			if after[i] > before[i] {
				ran++
			}
		}
		if ran != 1 {
			t.Errorf("the request was prefilled on %d engines (prompt tokens %v → %v), want 1", ran, before, after)
		}
	})

	t.Run("drain finishes it", func(t *testing.T) {
		before := prompts()
		done := make(chan btResult, 1)
		go func() { done <- btComplete(bal.url, "another question that gets a long answer", 400) }()
		busy := -1
		scWait(t, "an engine decoding the request", func() error {
			for i, s := range f.sims {
				if ltSim(t, s).Decoding == 1 {
					busy = i
					return nil
				}
			}
			return fmt.Errorf("no engine decoding yet")
		})
		// The sidecar tells the balancer the work is accepted (102) once
		// its scrape sees the engine running it, which on a loaded machine
		// can come well after the engine started: drain after that, the
		// case this test is about (before it, moving the request is right).
		scWait(t, "the sidecar counting the request accepted", func() error {
			if dp := ltSidecar(t, f.sidecars[busy]); dp.InFlight != 1 || dp.Prefilling != 0 {
				return fmt.Errorf("sidecar data path %+v, want 1 in flight past its prefill", dp)
			}
			return nil
		})
		f.sidecars[busy].proc.kill(syscall.SIGTERM)
		r := <-done
		if r.err != nil || r.status != 200 {
			t.Fatalf("request on the draining replica: %d %v", r.status, r.err)
		}
		if want := fmt.Sprintf("replica-%d", busy); r.replica != want {
			t.Errorf("answered by %q, want the draining %q", r.replica, want)
		}
		after := prompts()
		for i := range after {
			if i != busy && after[i] != before[i] && !strings.Contains(fmt.Sprint(after), "NaN") {
				t.Errorf("engine %d prefilled it too (prompt tokens %v → %v): the request was moved", i, before, after)
			}
		}
	})
}
