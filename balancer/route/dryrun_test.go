package route

import (
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/load"
)

// TestDryRunRecordsNothing checks that a dry run (explain) leaves no trace a
// later decision sees: the overlay holds no placement, round_robin keeps its
// turn and sglang_cache_aware's tree stays empty.
func TestDryRunRecordsNothing(t *testing.T) {
	hs := prompt(1, 1, 8, 8)
	for _, name := range append(append([]string{}, Policies...), Baselines...) {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, name, nil)
			cs := cands(3)
			req := Request{Model: "m", Hashes: hs, BlockSize: 16, PromptTokens: 8*16 + 1, Now: t0, DryRun: true}
			for range 5 {
				if _, _, err := p.Pick(&req, cs, NewScratch(3)); err != nil {
					t.Fatalf("dry Pick: %v", err)
				}
			}
			if o := overlayOf(p); o != nil {
				for _, c := range cs {
					if n := overlayPrefix(o, hs, c.ID, t0); n != 0 {
						t.Errorf("overlay holds %d blocks on %s after dry runs, want 0", n, c.ID)
					}
				}
			}
			if sg, ok := p.(*sglangCacheAware); ok {
				if m := sg.tree.match(hs); m.blocks != 0 {
					t.Errorf("sglang tree matches %d blocks after dry runs, want 0", m.blocks)
				}
			}
		})
	}
}

// TestDryRunRoundRobinKeepsTurn checks that dry runs between real picks do
// not move round_robin's sequence.
func TestDryRunRoundRobinKeepsTurn(t *testing.T) {
	p := newPolicy(t, PolicyRoundRobin, nil)
	cs := cands(3)
	var got []int
	for range 6 {
		dry := Request{Model: "m", Now: t0, DryRun: true}
		di, _, _ := p.Pick(&dry, cs, nil)
		real := Request{Model: "m", Now: t0}
		i, _, err := p.Pick(&real, cs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if di != i {
			t.Errorf("dry run answered %d, the next real pick was %d", di, i)
		}
		got = append(got, i)
	}
	want := []int{0, 1, 2, 0, 1, 2}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("picks with dry runs between = %v, want %v", got, want)
		}
	}
}

// TestDryRunMatchesPick checks that cost_model's dry run answers what the
// real pick then does, with a TTFT and a wait for every eligible candidate.
func TestDryRunMatchesPick(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, nil)
	cs := cands(3)
	hs := prompt(2, 2, 6, 6)
	cs[1].Prefix = fakeIndex{}.add(hs[:4])
	lease(cs[2].Own, 2000)
	cs[2].Healthy = false
	req := Request{Model: "m", Hashes: hs, BlockSize: 16, PromptTokens: 6*16 + 3, Now: t0, DryRun: true}
	di, dd, err := p.Pick(&req, cs, NewScratch(3))
	if err != nil {
		t.Fatal(err)
	}
	if dd.TTFTs[2] != -1 || dd.Waits[2] != -1 {
		t.Errorf("ineligible candidate has TTFT %v wait %v, want -1", dd.TTFTs[2], dd.Waits[2])
	}
	for i := range 2 {
		if dd.TTFTs[i] <= 0 || dd.Waits[i] < 0 {
			t.Errorf("candidate %d: TTFT %v wait %v, want > 0 and >= 0", i, dd.TTFTs[i], dd.Waits[i])
		}
	}
	if dd.TTFTs[di] != dd.EstimatedTTFT {
		t.Errorf("pick's TTFT %v differs from EstimatedTTFT %v", dd.TTFTs[di], dd.EstimatedTTFT)
	}
	req.DryRun = false
	i, d, err := p.Pick(&req, cs, NewScratch(3))
	if err != nil {
		t.Fatal(err)
	}
	if i != di || d.Reason != dd.Reason || d.CachedTokens != dd.CachedTokens || d.EstimatedTTFT != dd.EstimatedTTFT {
		t.Errorf("dry run %d %s %d %v; real pick %d %s %d %v", di, dd.Reason, dd.CachedTokens, dd.EstimatedTTFT, i, d.Reason, d.CachedTokens, d.EstimatedTTFT)
	}
	if i != 1 || d.CachedTokens != 4*16 {
		t.Errorf("pick %d with %d cached tokens, want 1 with 64", i, d.CachedTokens)
	}
}

// TestWorkOf checks that WorkOf counts this balancer's own requests and the
// other origins' from a fresh report, with the output reserve of each.
func TestWorkOf(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, nil)
	c := cands(1)[0]
	lease(c.Own, 100)
	c.Own.OutputReserve.Add(64) // its max_tokens
	c.Load = Load{Known: true, Exact: true, Report: load.Report{InFlight: 2, Pending: 1, PrefillTokens: 50}}
	got := WorkOf(p, &c, t0.Add(time.Millisecond))
	// The other origins' two requests reserve expected_output_tokens each.
	want := Work{InFlight: 3, Pending: 2, PrefillTokens: 150, OutputReserve: 64 + 2*256}
	if got != want {
		t.Errorf("WorkOf = %+v, want %+v", got, want)
	}
}
