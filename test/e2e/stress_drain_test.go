//go:build stress

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stLongMix is half streams, half non-streaming requests of 48 output
// tokens on engines with the default latency model: each lasts a few hundred
// milliseconds, so a drain always finds some in flight.
func stLongMix(tag string) func(i int) stReq {
	short := stMix(tag)
	return func(i int) stReq {
		r := short(i)
		r.stream, r.maxTokens = i%2 == 0, 48
		return r
	}
}

// TestStressSidecarDrain: one of three sidecars gets SIGTERM under load of
// streams and non-streaming requests: it leaves the gossip, finishes what it
// has, and no request is lost.
func TestStressSidecarDrain(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-sd"})
	bal := f.bals[0]
	load := stStartLoad(t, []string{bal.url}, 48, 200, stLongMix("sdrain"))
	load.waitDone(t, 400)
	inEngine := btEngineInFlight(t, f.sims[1])
	at := time.Now()
	f.sidecars[1].proc.kill(syscall.SIGTERM)
	drain := time.Since(at)
	load.waitDone(t, 400)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.end.After(at) })
	lost := during.lostBeforeBegin + during.brokeAfterBegin
	stRecord(t, stRow{Row: "09-sidecar-drain", Fault: "SIGTERM to 1 of 3 sidecars under streaming and non-streaming load",
		Result: fmt.Sprintf("%d of %d requests lost; it exited %d ms after the signal, with %d requests in its engine when signalled; exit status %v",
			lost, during.ok+lost, ms(drain), inEngine, f.sidecars[1].proc.err),
		Figures: map[string]any{"requests": during.ok + lost, "lost": lost, "drain_ms": ms(drain), "in_engine_at_signal": inEngine}})
	if lost > 0 {
		t.Errorf("%d requests lost in a sidecar's drain: %v", lost, during.errs)
	}
	if f.sidecars[1].proc.err != nil {
		t.Errorf("the drained sidecar exited with %v", f.sidecars[1].proc.err)
	}
}

// TestStressBalancerDrain: one of two balancers gets SIGTERM under load; the
// client moves to the other on refused connections. The draining balancer
// finishes the requests it has; no request is lost.
func TestStressBalancerDrain(t *testing.T) {
	bin := scBuild(t)
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-da", "bal-db"})
	load := stStartLoadOpts(t, []string{f.bals[0].url, f.bals[1].url}, 48, 200, true, stLongMix("bdrain"))
	load.waitDone(t, 400)
	at := time.Now()
	f.bals[0].proc.kill(syscall.SIGTERM)
	drain := time.Since(at)
	load.waitDone(t, 400)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.end.After(at) })
	lost := during.lostBeforeBegin + during.brokeAfterBegin
	stRecord(t, stRow{Row: "10-balancer-drain", Fault: "SIGTERM to 1 of 2 balancers under streaming and non-streaming load; the client moves over on refused connections and resends a request whose kept-alive connection closed before any answer byte",
		Result: fmt.Sprintf("%d of %d requests lost; it exited %d ms after the signal; %d requests moved over; exit status %v",
			lost, during.ok+lost, ms(drain), during.failovers, f.bals[0].proc.err),
		Figures: map[string]any{"requests": during.ok + lost, "lost": lost, "drain_ms": ms(drain), "failovers": during.failovers}})
	if lost > 0 {
		t.Errorf("%d requests lost in a balancer's drain: %v", lost, during.errs)
	}
	if f.bals[0].proc.err != nil {
		t.Errorf("the drained balancer exited with %v", f.bals[0].proc.err)
	}
}

// stSimCounter sums a counter of a simulator's metrics page over the lines
// that contain labels.
func stSimCounter(t *testing.T, sim *scSim, name, labels string) float64 {
	t.Helper()
	return scMetric(t, &scSidecar{admin: sim.url}, name, labels)
}

// TestStressDisconnects: 1,000 long streams through the balancer, each
// dropped by its client after a random number of events: every one is
// aborted in the engine (its finish reason is abort), none runs on, and no
// engine slot stays taken.
func TestStressDisconnects(t *testing.T) {
	const streams, parallel = 1000, 50
	bin := scBuild(t)
	f := btStartFleet(t, bin, 2, 4000, []string{"bal-x"})
	bal := f.bals[0]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallel}}
	var mu sync.Mutex
	var failed []string
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range streams {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := fmt.Sprintf(`{"model":"e2e-model","prompt":"stream %d of the disconnect test, %s","max_tokens":4000,"ignore_eos":true,"stream":true}`,
				i, strings.Repeat("with some words ", i%7))
			req, _ := http.NewRequestWithContext(ctx, "POST", bal.url+"/v1/completions", strings.NewReader(body))
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("stream %d: %v %v", i, err, resp))
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for n := 1 + rand.IntN(20); n > 0 && sc.Scan(); {
				if strings.HasPrefix(sc.Text(), "data: ") {
					n--
				}
			}
			cancel() // the client goes away mid-stream
		})
	}
	wg.Wait()
	sum := func(name, labels string) float64 {
		v := 0.0
		for _, s := range f.sims {
			v += stSimCounter(t, s, name, labels)
		}
		return v
	}
	start := time.Now()
	scWait(t, "every stream to be aborted in an engine", func() error {
		inFlight := int64(0)
		for _, s := range f.sims {
			inFlight += btEngineInFlight(t, s)
		}
		if a := sum("vllm:request_success_total", `finished_reason="abort"`); a < streams || inFlight > 0 {
			return fmt.Errorf("%v aborted, %d in flight", a, inFlight)
		}
		return nil
	})
	settle := time.Since(start)
	aborted := sum("vllm:request_success_total", `finished_reason="abort"`)
	finished := sum("vllm:request_success_total", "")
	stRecord(t, stRow{Row: "11-disconnects", Fault: "1,000 long streams (50 at a time), each dropped by its client after 1 to 20 events",
		Result: fmt.Sprintf("%v of %d aborted in the engines, %v finished otherwise, 0 slots left taken %d ms after the last disconnect; %d streams failed to start",
			aborted, streams, finished-aborted, ms(settle), len(failed)),
		Figures: map[string]any{"streams": streams, "aborted": aborted, "finished_otherwise": finished - aborted,
			"settle_ms": ms(settle), "failed_to_start": len(failed)}})
	if len(failed) > 0 {
		t.Errorf("%d streams failed to start: %v", len(failed), failed[:min(5, len(failed))])
	}
	if aborted != streams || finished != aborted {
		t.Errorf("engines aborted %v and finished %v requests in all, want %d aborted and nothing else", aborted, finished, streams)
	}
}
