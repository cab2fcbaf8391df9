package bench

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A server of known timing yields exact TTFT, TPOT, ITL and E2E under the
// fake clock, counted from the scheduled send time.
func TestRunKnownTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &streamHandler{ttft: 150 * time.Millisecond, itl: 20 * time.Millisecond, tokens: 5, replica: "r1", predicted: 64, cached: 48}
		hc := startPipeServer(t, h)
		r, err := NewRunner(testConfig(), nil, hc)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background(), oneTurnSessions(3, time.Second, 5))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 3 {
			t.Fatalf("got %d records, want 3", len(res.Records))
		}
		for _, rec := range res.Records {
			if !rec.OK() {
				t.Fatalf("request failed: %+v", rec)
			}
			got := struct {
				TTFT, TPOT, E2E, Lag time.Duration
				ITL                  []time.Duration
				Replica              string
				Pred, Cached         int
			}{rec.TTFT, rec.TPOT, rec.E2E, rec.SendLag, rec.ITL, rec.Replica, rec.PredictedCached, rec.CachedTokens}
			want := got
			want.TTFT, want.TPOT, want.E2E, want.Lag = 150*time.Millisecond, 20*time.Millisecond, 230*time.Millisecond, 0
			want.ITL = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
			want.Replica, want.Pred, want.Cached = "r1", 64, 48
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("record %d mismatch (-want +got):\n%s", rec.Session, diff)
			}
		}
		s := res.Summary
		if s.TTFT.P99 != 150 || s.TPOT.P50 != 20 || s.ITL.Max != 20 {
			t.Errorf("summary TTFT p99 %v, TPOT p50 %v, ITL max %v; want 150, 20, 20", s.TTFT.P99, s.TPOT.P50, s.ITL.Max)
		}
		if s.Predicted != 3 || s.PredictionExact != 0 || s.PredictionMAE != 16 {
			t.Errorf("prediction: %d exact %v mae %v, want 3, 0, 16", s.Predicted, s.PredictionExact, s.PredictionMAE)
		}
		if s.HitRateUsage != 0.48 {
			t.Errorf("hit rate from usage %v, want 0.48", s.HitRateUsage)
		}
		if s.GoodFraction != 1 {
			t.Errorf("good fraction %v, want 1", s.GoodFraction)
		}
		if diff := cmp.Diff(map[string]float64{"r1": 1}, s.ReplicaShare); diff != "" {
			t.Errorf("replica share (-want +got):\n%s", diff)
		}
	})
}

// A server that serves one request at a time falls behind an arrival every
// 10 ms with 100 ms of work each: latency counted from the scheduled time
// grows by 90 ms per request, although each request, once sent, waits the
// same. A closed-loop client would report a flat 100 ms.
func TestRunCoordinatedOmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &streamHandler{ttft: 100 * time.Millisecond, tokens: 1, serial: make(chan struct{}, 1)}
		hc := startPipeServer(t, h)
		cfg := testConfig()
		cfg.SLO.TTFT = 500 * time.Millisecond
		r, err := NewRunner(cfg, nil, hc)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		res, err := r.Run(context.Background(), oneTurnSessions(n, 10*time.Millisecond, 1))
		if err != nil {
			t.Fatal(err)
		}
		// The server admits requests in arrival order here: the k-th
		// admitted finishes its first token at (k+1)·100 ms.
		var got []time.Duration
		for _, rec := range res.Records {
			if !rec.OK() {
				t.Fatalf("request failed: %+v", rec)
			}
			if rec.SendLag != 0 {
				t.Errorf("request %d left %v late; the client must not wait for the server", rec.Session, rec.SendLag)
			}
			got = append(got, rec.Scheduled+rec.TTFT)
		}
		// Completion times are the multiples of 100 ms, in some order.
		seen := map[time.Duration]bool{}
		for _, c := range got {
			seen[c] = true
		}
		for k := 1; k <= n; k++ {
			if !seen[time.Duration(k)*100*time.Millisecond] {
				t.Fatalf("no request got its first token at %v; completions %v", time.Duration(k)*100*time.Millisecond, got)
			}
		}
		if max := res.Summary.TTFT.Max; max < 1800 {
			t.Errorf("max TTFT %v ms; with coordinated omission corrected it must reach ≥ 1800 ms", max)
		}
		if res.Summary.GoodFraction >= 0.5 {
			t.Errorf("good fraction %v; most requests miss a 500 ms TTFT SLO", res.Summary.GoodFraction)
		}
	})
}

// A multi-turn session resends the previous answer and waits its think time
// after the previous turn's end.
func TestRunSessionTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &streamHandler{ttft: 50 * time.Millisecond, itl: 10 * time.Millisecond, tokens: 3}
		hc := startPipeServer(t, h)
		r, err := NewRunner(testConfig(), nil, hc)
		if err != nil {
			t.Fatal(err)
		}
		s := Session{Start: 100 * time.Millisecond, System: "sys ", Turns: []Turn{
			{User: "ab cd ", MaxTokens: 3}, {User: "ef gh ", MaxTokens: 3, Think: time.Second}}}
		res, err := r.Run(context.Background(), []Session{s})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 2 {
			t.Fatalf("got %d records, want 2", len(res.Records))
		}
		// Turn 0: due 100 ms, ends at 100+50+20 = 170 ms; turn 1 due 1170 ms.
		if got, want := res.Records[1].Scheduled, 1170*time.Millisecond; got != want {
			t.Errorf("turn 1 scheduled at %v, want %v", got, want)
		}
		p := res.Prompts()
		if len(p) != 2 || p[1].Tokens <= p[0].Tokens {
			t.Fatalf("prompts %+v: the second turn must carry the first and its answer", p)
		}
	})
}

// Halfway through the drain no session starts another turn, so a turn is
// not sent only to be cut while it streams; at the drain's end a request
// still without its first token is cancelled and counted as failed, and one
// streaming is cut: answered, with the TTFT and TPOT of what came.
func TestRunDrainFinishesWhatWasSent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttft     time.Duration
		itl      time.Duration
		tokens   int
		wantOK   bool
		wantCut  bool
		wantTPOT time.Duration
	}{
		{"answered before the drain's end", 1500 * time.Millisecond, 10 * time.Millisecond, 2, true, false, 10 * time.Millisecond},
		{"no first token by the drain's end", 5 * time.Second, 10 * time.Millisecond, 2, false, false, 0},
		// Tokens at 2, 2.9, 3.8 and 4.7 s; cut at 5 s.
		{"streaming at the drain's end", time.Second, 900 * time.Millisecond, 10, true, true, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &streamHandler{ttft: tc.ttft, itl: tc.itl, tokens: tc.tokens}
				hc := startPipeServer(t, h)
				cfg := testConfig()
				cfg.Drain = 4 * time.Second
				r, err := NewRunner(cfg, nil, hc)
				if err != nil {
					t.Fatal(err)
				}
				// The last arrival is at 1 s: turns stop at 3 s, the drain
				// ends at 5 s. The first turn ends at 1 s + ttft + 10 ms;
				// the second, due 2 s later (4.51 s at the earliest), is
				// never sent. Sent, it would stream past 5 s and be cut.
				s := Session{Start: time.Second, Turns: []Turn{
					{User: "ab cd ", MaxTokens: 2}, {User: "ef gh ", MaxTokens: 2, Think: 2 * time.Second}}}
				res, err := r.Run(context.Background(), []Session{s})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Records) != 1 {
					t.Fatalf("got %d records, want the first turn only: %+v", len(res.Records), res.Records)
				}
				rec := res.Records[0]
				if rec.OK() != tc.wantOK || rec.Cut != tc.wantCut {
					t.Errorf("first turn OK %v cut %v (%+v), want %v and %v", rec.OK(), rec.Cut, rec, tc.wantOK, tc.wantCut)
				}
				if tc.wantOK && rec.TPOT != tc.wantTPOT {
					t.Errorf("TPOT %v, want %v", rec.TPOT, tc.wantTPOT)
				}
				if tc.wantCut && (rec.CompletionTokens != 4 || rec.TTFT != time.Second) {
					t.Errorf("cut: %d tokens, TTFT %v; want the 4 that came and 1s", rec.CompletionTokens, rec.TTFT)
				}
				if s := Summarize(res.Records, SLO{TTFT: 2 * time.Second, TPOT: 2 * time.Second}); s.Failed != btoi(!tc.wantOK) || s.Cut != btoi(tc.wantCut) {
					t.Errorf("summary failed %d cut %d", s.Failed, s.Cut)
				}
			})
		})
	}
}

// With several targets (one per balancer), requests spread over them evenly
// and not in turn: consecutive arrivals in turn over the balancers, in
// lockstep with each balancer's own round robin, sent 4 in a row to one
// replica.
func TestRunSpreadsOverTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &streamHandler{ttft: time.Millisecond, itl: time.Millisecond, tokens: 1}
		var mu sync.Mutex
		hosts := map[int]string{}
		hc := startPipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hosts[len(hosts)] = r.Host
			mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		cfg := testConfig()
		cfg.Targets = []string{"http://t0", "http://t1", "http://t2", "http://t3"}
		r, err := NewRunner(cfg, nil, hc)
		if err != nil {
			t.Fatal(err)
		}
		const n = 400
		if _, err := r.Run(context.Background(), oneTurnSessions(n, 10*time.Millisecond, 1)); err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		inTurn := 0
		for i := range n {
			count[hosts[i]]++
			if i > 0 && hosts[i] == cfg.Targets[(targetIndex(cfg.Targets, hosts[i-1])+1)%4][len("http://"):] {
				inTurn++
			}
		}
		for _, tg := range cfg.Targets {
			if c := count[tg[len("http://"):]]; c < n/4*7/10 || c > n/4*13/10 {
				t.Errorf("target %s got %d of %d requests, want about %d", tg, c, n, n/4)
			}
		}
		if inTurn > n/2 {
			t.Errorf("%d of %d consecutive arrivals went to the next target in turn, want about a quarter", inTurn, n)
		}
	})
}

func targetIndex(targets []string, host string) int {
	for i, tg := range targets {
		if tg[len("http://"):] == host {
			return i
		}
	}
	return -1
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
