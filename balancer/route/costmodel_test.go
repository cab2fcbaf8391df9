package route

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// refIdleTTFT is internal/enginesim LatencyModel.IdleTTFT written out step
// by step (the balancer must not import the simulator): the closed form the
// cost model must match on an idle replica.
func refIdleTTFT(c CostConfig, prompt, cached int) time.Duration {
	cached = max(0, min(cached, prompt-1))
	t := c.RequestOverhead
	for done := cached; done < prompt; {
		n := min(c.StepTokenBudget, prompt-done)
		lin := max(float64(c.WeightFloor), float64(n)/c.LinearTokPerSec*1e9)
		att := c.AttentionPerPairNS * float64(n) * (float64(done) + float64(n)/2)
		t += time.Duration(math.Round(float64(c.StepOverhead) + lin + att))
		done += n
	}
	return t
}

func TestCostModelMatchesIdleClosedForm(t *testing.T) {
	c := DefaultCostConfig()
	for _, tc := range []struct {
		name           string
		prompt, cached int
		paper          time.Duration // docs/perf-model.md#what-the-model-gives, without T_req
	}{
		{"256 cold", 256, 0, 7 * time.Millisecond},
		{"2k cold", 2048, 0, 47 * time.Millisecond},
		{"8k cold", 8192, 0, 219 * time.Millisecond},
		{"32k cold", 32768, 0, 1404 * time.Millisecond}, // "1.40 s"
		{"32k with 28k cached", 32768, 28672, 253 * time.Millisecond},
		{"8k with 6k cached", 8192, 6144, 64 * time.Millisecond},
		{"fully cached still computes a token", 4096, 4096, 0},
		{"odd sizes", 12345, 1600, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := refIdleTTFT(c, tc.prompt, tc.cached)
			got := c.IdleTTFT(tc.prompt, tc.cached)
			if d := got - want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("IdleTTFT(%d, %d) = %v, want %v", tc.prompt, tc.cached, got, want)
			}
			if tc.paper > 0 {
				if d := got - c.RequestOverhead - tc.paper; d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("IdleTTFT - T_req = %v, docs/perf-model.md says %v", got-c.RequestOverhead, tc.paper)
				}
			}
			// Pick on one idle replica holding the cached blocks reports
			// the same estimate.
			blocks := tc.prompt / 16
			hs := prompt(1, 1, blocks, blocks)
			cs := cands(1)
			cs[0].Prefix = fakeIndex{}.add(hs[:tc.cached/16])
			r := req(hs)
			r.PromptTokens = tc.prompt
			_, d := mustPick(t, newPolicy(t, PolicyCostModel, nil), r, cs)
			wantCached := min(tc.cached/16, (tc.prompt-1)/16) * 16
			if d.CachedTokens != wantCached {
				t.Errorf("CachedTokens = %d, want %d", d.CachedTokens, wantCached)
			}
			if ref := refIdleTTFT(c, tc.prompt, wantCached); absDur(d.EstimatedTTFT-ref) > time.Microsecond {
				t.Errorf("EstimatedTTFT = %v, want %v", d.EstimatedTTFT, ref)
			}
		})
	}
}

// fleet4 returns four fresh, equally loaded replicas; replica 2 holds the
// first warm blocks of hs.
func fleet4(hs []kvblock.Hash, warm int) []Candidate {
	cs := cands(4)
	for i := range cs {
		cs[i].Load.Running = 4
	}
	cs[2].Prefix = fakeIndex{}.add(hs[:warm])
	return cs
}

// withCapacity gives every candidate a KV capacity of blocks.
func withCapacity(cs []Candidate, blocks int) {
	for i := range cs {
		cs[i].CapacityBlocks = blocks
	}
}

func TestCostModelChoices(t *testing.T) {
	hs := prompt(3, 3, 100, 128) // a 2k-token prompt, 100 blocks shared
	for _, tc := range []struct {
		name       string
		edit       func(cs []Candidate)
		cfg        func(*Config)
		want       int // -1: anything but the warm replica 2
		wantReason Reason
	}{
		{name: "warm wins at equal load", want: 2, wantReason: ReasonLowestTTFT},
		{
			name: "long queue on the warm replica",
			edit: func(cs []Candidate) {
				cs[2].Load.Exact, cs[2].Load.InFlight, cs[2].Load.Pending, cs[2].Load.PrefillTokens = true, 5, 5, 50000
			},
			want:       -1,
			wantReason: ReasonLowestTTFT,
		},
		{
			name:       "queue counted from waiting requests when tokens unknown",
			edit:       func(cs []Candidate) { cs[2].Load.Waiting = 20 },
			want:       -1,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "decoding requests cost little before the first token",
			edit: func(cs []Candidate) {
				cs[2].Own.InFlight.Store(30)
			},
			want:       2,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "stale queue report is ignored",
			edit: func(cs []Candidate) {
				cs[2].Load.Exact, cs[2].Load.InFlight, cs[2].Load.Pending, cs[2].Load.PrefillTokens, cs[2].Load.Stale = true, 5, 5, 50000, true
			},
			want:       2,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "own pending prefill counts when the report is stale",
			edit: func(cs []Candidate) {
				cs[2].Load.Stale = true
				lease(cs[2].Own, 60000)
			},
			want:       -1,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "stale summary is not trusted",
			edit: func(cs []Candidate) {
				cs[2].SummaryStale = true
				cs[2].Own.InFlight.Store(5) // worse than the others when cold
			},
			cfg:        func(c *Config) { c.PrefixBlocks = 1 },
			want:       -1,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "warm replica out of KV memory",
			edit: func(cs []Candidate) {
				withCapacity(cs, 4096)
				cs[2].Load.KVUsage = 0.995 // 326 of 65,536 tokens free: not the 448 uncached
			},
			want:       -1,
			wantReason: ReasonKVSpill,
		},
		{
			name: "warm replica with KV room to spare",
			edit: func(cs []Candidate) {
				withCapacity(cs, 4096)
				cs[2].Load.KVUsage = 0.97 // 1,966 tokens free: the 448 uncached, 256 of its output and 256 for each of 4 running
			},
			want:       2,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "every replica out of KV memory: the usual choice",
			edit: func(cs []Candidate) {
				withCapacity(cs, 4096)
				for i := range cs {
					cs[i].Load.KVUsage = 1
				}
			},
			want:       2,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "every replica out of KV memory but one whose report lapsed: the usual choice",
			edit: func(cs []Candidate) {
				withCapacity(cs, 4096)
				for i := range cs {
					cs[i].Load.KVUsage = 1
				}
				cs[0].Load.Stale = true // unknown, not room
			},
			want:       2,
			wantReason: ReasonLowestTTFT,
		},
		{
			name: "stale KV usage is ignored",
			edit: func(cs []Candidate) {
				withCapacity(cs, 4096)
				cs[2].Load.KVUsage, cs[2].Load.Stale = 1, true
			},
			want:       2,
			wantReason: ReasonLowestTTFT,
		},
		{
			name:       "other block size gets no prediction",
			edit:       func(cs []Candidate) { cs[2].BlockSize = 32; lease(cs[2].Own, 20000) },
			want:       -1,
			wantReason: ReasonLowestTTFT,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fleet4(hs, 100)
			if tc.edit != nil {
				tc.edit(cs)
			}
			got, d := mustPick(t, newPolicy(t, PolicyCostModel, tc.cfg), req(hs), cs)
			// Going cold, the pick among the near-equal others may be the
			// rotation's (costModel.spread), and says so.
			reasonOK := d.Reason == tc.wantReason || tc.want < 0 && tc.wantReason == ReasonLowestTTFT && d.Reason == ReasonRotation
			if tc.want >= 0 && got != tc.want || tc.want < 0 && got == 2 || !reasonOK {
				t.Errorf("pick %d (%q), want %d (%q); decision %+v", got, d.Reason, tc.want, tc.wantReason, d)
			}
		})
	}
}

// Many decoding requests slow a replica's prefill steps (decode
// interference): of two cold replicas the one with fewer decodes wins.
func TestCostModelDecodeInterference(t *testing.T) {
	cs := cands(2)
	cs[0].Load.Running = 200
	p := newPolicy(t, PolicyCostModel, nil)
	got, d := mustPick(t, p, req(prompt(1, 1, 0, 128)), cs)
	if got != 1 {
		t.Fatalf("picked %d, want the replica without decodes", got)
	}
	e := newEstimator(DefaultCostConfig())
	busy, _ := e.ttft(queue{}, 200, 2047, 0)
	if float64(d.EstimatedTTFT) >= busy {
		t.Errorf("idle estimate %v not below busy estimate %v", d.EstimatedTTFT, time.Duration(busy))
	}
}

// The estimate grows with queued tokens and running decodes, and falls with
// cached tokens (property over random inputs).
func TestEstimatorMonotone(t *testing.T) {
	e := newEstimator(DefaultCostConfig())
	for q := 0.0; q < 100000; q += 7919 {
		for r := 0; r < 600; r += 97 {
			for c := 0; c < 30000; c += 4001 {
				base, _ := e.ttft(queue{tokens: q}, r, 32768-c, c)
				if more, _ := e.ttft(queue{tokens: q + 1000}, r, 32768-c, c); more < base {
					t.Fatalf("more queue made it faster at q=%v r=%d c=%d", q, r, c)
				}
				if more, _ := e.ttft(queue{tokens: q}, r+10, 32768-c, c); more < base {
					t.Fatalf("more decodes made it faster at q=%v r=%d c=%d", q, r, c)
				}
				if warmer, _ := e.ttft(queue{tokens: q}, r, 32768-c-1000, c+1000); warmer > base {
					t.Fatalf("more cache made it slower at q=%v r=%d c=%d", q, r, c)
				}
			}
		}
	}
}

// A prefix whose warm replica queues for longer than HotPrefixQueueWait is
// replicated to the next best replica (at a bounded cost), which the overlay
// then shows as warm; not where every replica queues as long.
func TestCostModelReplicatesHotPrefix(t *testing.T) {
	hs := prompt(9, 9, 2000, 2048) // 32k tokens, 32k shared
	setup := func() []Candidate {
		cs := cands(4)
		cs[2].Prefix = fakeIndex{}.add(hs[:2000])
		cs[2].Load.Exact, cs[2].Load.InFlight, cs[2].Load.Pending, cs[2].Load.PrefillTokens = true, 6, 6, 45000
		return cs
	}
	cs := setup()
	got, d := mustPick(t, newPolicy(t, PolicyCostModel, func(c *Config) { c.Cost.HotPrefixQueueWait = 0 }), req(hs), cs)
	if got != 2 || d.Reason != ReasonLowestTTFT {
		t.Fatalf("without replication: pick %d %q, want the warm replica 2", got, d.Reason)
	}
	cs = setup()
	p := newPolicy(t, PolicyCostModel, nil)
	got, d = mustPick(t, p, req(hs), cs)
	if got == 2 || d.Reason != ReasonHotPrefix {
		t.Fatalf("with replication: pick %d %q, want another replica, %q", got, d.Reason, ReasonHotPrefix)
	}
	// Every replica queueing as long as the warm one: a copy would add its
	// prefill to a queue as long, so the prefix stays home. (The ladder's
	// shape: 6,000 tokens shared of 7,200, cheap enough to copy within
	// HotPrefixQueueWait.)
	short := prompt(9, 9, 375, 450)
	busy := cands(4)
	busy[2].Prefix = fakeIndex{}.add(short[:375])
	for i := range busy {
		busy[i].Load.Exact, busy[i].Load.InFlight, busy[i].Load.Pending, busy[i].Load.PrefillTokens = true, 6, 6, 45000
	}
	if got, d := mustPick(t, newPolicy(t, PolicyCostModel, nil), req(short), busy); got != 2 || d.Reason != ReasonLowestTTFT {
		t.Errorf("every replica queueing alike: pick %d %q, want the warm replica 2 (%q)", got, d.Reason, ReasonLowestTTFT)
	}
	busy[0].Load.PrefillTokens = 20000 // one queueing far less: there a copy pays
	if got, d := mustPick(t, newPolicy(t, PolicyCostModel, nil), req(short), busy); got != 0 {
		t.Errorf("one replica queueing far less: pick %d %q, want 0", got, d.Reason)
	}
	other, _ := mustPick(t, newPolicy(t, PolicyCostModel, func(c *Config) { c.Seed = 77 }), req(hs), setup())
	if other != got {
		t.Errorf("two balancers replicate the hot prefix to %d and %d, want the same replica", got, other)
	}
	tk := lease(cs[got].Own, d.UncachedTokens)
	cs[got].Own.Prefilled(d.UncachedTokens, tk, time.Time{})
	_, d2 := mustPick(t, p, req(hs), cs)
	if d2.Cached[got] == 0 {
		t.Errorf("after replication the overlay predicts nothing on the new home %d: %v", got, d2.Cached)
	}
}

// The miss penalty keeps a prefix on its warm replica while the queue there
// costs up to (1 + MissPenalty) cold prefills; the pure greedy rule
// (MissPenalty 0) moves it as soon as the queue costs one. The decision's
// estimate never includes the penalty.
func TestCostModelMissPenalty(t *testing.T) {
	hs := prompt(5, 5, 192, 196) // 3,136 tokens, 3,072 shared
	e := newEstimator(DefaultCostConfig())
	cold, _ := e.ttft(queue{}, 0, 196*16, 0)
	setup := func(queued float64) []Candidate {
		cs := cands(2)
		cs[0].Prefix = fakeIndex{}.add(hs[:192])
		cs[0].Load.Exact, cs[0].Load.InFlight, cs[0].Load.Pending, cs[0].Load.PrefillTokens = true, 3, 3, int64(queued)
		return cs
	}
	// A queued whose wait is about 1.5 cold prefills.
	queued := math.Floor(1.5 * cold / e.nsPerTok)
	greedy := newPolicy(t, PolicyCostModel, func(c *Config) { c.Cost.MissPenalty = 0 })
	if got, _ := mustPick(t, greedy, req(hs), setup(queued)); got != 1 {
		t.Errorf("MissPenalty 0: pick %d, want the cold replica 1", got)
	}
	p := newPolicy(t, PolicyCostModel, nil)
	got, d := mustPick(t, p, req(hs), setup(queued))
	if got != 0 {
		t.Errorf("MissPenalty 1: pick %d, want the warm replica 0", got)
	}
	if want, _ := e.ttft(queue{tokens: queued}, 0, d.UncachedTokens, d.CachedTokens); d.CachedTokens != 3072 || math.Abs(float64(d.EstimatedTTFT)-want) > 1 {
		t.Errorf("EstimatedTTFT = %v with %d cached, want the estimate without penalty %v with 3072", d.EstimatedTTFT, d.CachedTokens, time.Duration(want))
	}
	// Three cold prefills of queued outweigh the penalty.
	if got, _ := mustPick(t, p, req(hs), setup(3*cold/e.nsPerTok)); got != 1 {
		t.Errorf("MissPenalty 1 behind a long queued: pick %d, want the cold replica 1", got)
	}
}

// A long prompt whose warm replica has a queued longer than one engine step,
// while the others idle, spills: the miss penalty alone would keep it there.
func TestCostModelBoundsWork(t *testing.T) {
	hs := prompt(11, 11, 600, 1000) // 16k tokens, 9.6k of them warm on replica 0
	setup := func(queued int64) []Candidate {
		cs := cands(4)
		cs[0].Prefix = fakeIndex{}.add(hs[:600])
		lease(cs[0].Own, int(queued))
		return cs
	}
	// A fresh policy per pick: the overlay would remember the last placement.
	policy := func() Policy { return newPolicy(t, PolicyCostModel, func(c *Config) { c.Cost.HotPrefixQueueWait = 0 }) }
	if got, d := mustPick(t, policy(), req(hs), setup(2000)); got != 0 || d.Reason != ReasonLowestTTFT {
		t.Errorf("short queue: pick %d %q, want the warm replica", got, d.Reason)
	}
	e := newEstimator(DefaultCostConfig())
	cold, _ := e.ttft(queue{}, 0, 16000, 0)
	warm, _ := e.ttft(queue{}, 0, 16000-9600, 9600)
	saves := cold - warm
	if step := e.step(float64(e.budget), 0); 1.5*saves < 1.2*step {
		t.Fatalf("the cache saves %v ns, too little against a step of %v for this test", saves, step)
	}
	// A queue whose wait is about 1.5 times what the cache saves: the miss
	// penalty (1) would keep the prompt home, the bound does not.
	queued := int64(1.5 * saves / e.nsPerTok)
	got, d := mustPick(t, policy(), req(hs), setup(queued))
	if got == 0 || d.Reason != ReasonLoadSpill {
		t.Errorf("queue of 1.5 savings: pick %d %q, want a spill off the warm replica", got, d.Reason)
	}
	greedy := newPolicy(t, PolicyCostModel, func(c *Config) { c.Cost.HotPrefixQueueWait = 0; c.LoadFactor = 100 })
	if got, _ := mustPick(t, greedy, req(hs), setup(queued)); got != 0 {
		t.Errorf("the same queue with LoadFactor 100: pick %d, want the warm replica (the penalty keeps it home)", got)
	}
}

// cost_model never picks a candidate whose load delays the request by more
// than its work bound: LoadFactor × the weighted mean delay, one full step,
// or what its cache saves, whichever is largest (random loads, weights,
// caches).
func TestCostModelWorkBoundProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.LoadFactor = 1.25; c.Cost.HotPrefixQueueWait = 0 })
	e := newEstimator(DefaultCostConfig())
	for n := range 2000 {
		cs := cands(1 + r.IntN(8))
		hs := prompt(r.Uint32N(5), r.Uint32(), 8+r.IntN(200), 300+r.IntN(400))
		prompt := 16 * len(hs)
		for i := range cs {
			lease(cs[i].Own, r.IntN(40000))
			cs[i].Own.InFlight.Add(int64(r.IntN(30)))
			cs[i].Weight = []float64{1, 1, 2, 3}[r.IntN(4)]
			if r.IntN(2) == 0 {
				cs[i].Prefix = fakeIndex{}.add(hs[:r.IntN(len(hs))])
			}
		}
		i, d := mustPick(t, p, req(hs), cs)
		delay := func(k int) (float64, float64) {
			w := cs[k].ownWork()
			c := int(d.Cached[k])
			t, _ := e.ttft(e.queueOf(w, time.Time{}), w.Decodes(), prompt-c, c)
			idle, _ := e.ttft(queue{}, 0, prompt-c, c)
			cold, _ := e.ttft(queue{}, 0, prompt, 0)
			return t - idle, cold - idle
		}
		total, weights := 0.0, 0.0
		for k := range cs {
			dl, _ := delay(k)
			total += dl
			weights += cs[k].Weight
		}
		dl, saves := delay(i)
		bound := max(1.25*total/weights*cs[i].Weight, e.step(float64(e.budget), 0), saves)
		if dl > bound*(1+1e-9) {
			t.Fatalf("case %d: picked %d with delay %.0f ns over its bound %.0f", n, i, dl, bound)
		}
	}
}

// The TTFT correction is relative: a shared error of the constants changes
// no choice, and a replica that has served (measured faster than estimated)
// is not preferred over one not measured yet; a replica measured slower than
// the others is charged for it.
func TestCostModelCorrectionIsRelative(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, nil)
	picks := map[int]int{}
	for i := range 200 {
		cs := cands(4)
		cs[0].TTFTScale = 0.5 // served, estimates were high; the others unmeasured
		got, _ := mustPick(t, p, req(prompt(uint32(500+i), uint32(500+i), 0, 64)), cs)
		picks[got]++
	}
	if picks[0] > 80 {
		t.Errorf("the measured replica took %d of 200 new prompts, want about a quarter: %v", picks[0], picks)
	}
	cs := cands(4)
	for k := range cs {
		cs[k].TTFTScale = 0.5
	}
	cs[2].TTFTScale = 2 // four times slower than the others
	for i := range 50 {
		if got, _ := mustPick(t, p, req(prompt(uint32(900+i), uint32(900+i), 0, 64)), cs); got == 2 {
			t.Fatalf("prompt %d went to the slow replica", i)
		}
	}
}

// A replica whose step is under way charges a new request only the rest of
// that step; prompts queued behind no step, in full. Measured against the
// engine's schedule: a request sent mid-step is scheduled at the step's end,
// with what queued during it (Counters.Step).
func TestCostModelChargesTheRestOfTheStepUnderWay(t *testing.T) {
	cs := cands(2)
	// Replica 0: the first token of one request ended a step at t0; the
	// other, 2,048 tokens, is in the step that began then, beside the
	// first one's decode.
	first := lease(cs[0].Own, 512)
	lease(cs[0].Own, 2048)
	cs[0].Own.Prefilled(512, first, t0)
	// Replica 1: 2,048 tokens sent, no step end seen: all queued.
	lease(cs[1].Own, 2048)
	e := newEstimator(DefaultCostConfig())
	step := e.step(2048+1, 1) + e.att*2048*e.queuedPrompt/2
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		want    int
	}{
		{"near its end", time.Duration(0.9 * step), 0},
		{"just begun", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := req(prompt(1, 1, 0, 64))
			r.Now = t0.Add(tc.elapsed)
			got, d := mustPick(t, newPolicy(t, PolicyCostModel, nil), r, cs)
			if got != tc.want {
				t.Errorf("picked %d (waits %v), want %d", got, d.Waits, tc.want)
			}
			if want := time.Duration(step - float64(tc.elapsed)); absDur(d.Waits[0]-want) > time.Microsecond {
				t.Errorf("replica 0's queue wait %v, want the rest of its step %v", d.Waits[0], want)
			}
			queued, _ := e.ttft(queue{tokens: 2048}, 0, 1024, 0)
			alone, _ := e.ttft(queue{}, 0, 1024, 0)
			if want := time.Duration(queued - alone); absDur(d.Waits[1]-want) > time.Microsecond {
				t.Errorf("replica 1's queue wait %v, want its queue in full %v", d.Waits[1], want)
			}
		})
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }
