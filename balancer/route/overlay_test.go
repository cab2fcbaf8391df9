package route

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// A burst of requests sharing a new 6,000-token prefix, faster than any
// summary update, lands on one replica with the overlay and scatters
// without it. (Requests that arrive while the first is still prefilling the
// prefix may go elsewhere: waiting behind that prefill costs about as much
// as computing it again, and the cost model counts both.)
func TestOverlayMakesABurstColocate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   string
		ttl      time.Duration
		together bool
		// homes bounds the replicas the burst may land on when not together.
		homes int
		// spread is SpreadMargin (cost_model).
		spread float64
	}{
		{"cost_model with overlay", PolicyCostModel, 10 * time.Second, true, 1, 0.25},
		// Without the overlay the replicas stay near-equal (each prefill is
		// over before the next request) and none holds the prefix, so the
		// prompts go round: what another balancer's burst does before the
		// summaries say where the prefix is (docs/routing.md).
		{"cost_model without overlay", PolicyCostModel, 0, false, 8, 0.25},
		// Without rotation near ties go to the prefix's rendezvous pair,
		// the fewer in flight of the two: two homes at most.
		{"cost_model without overlay or rotation", PolicyCostModel, 0, false, 2, 0},
		{"kv_aware with overlay", PolicyKVAware, 10 * time.Second, true, 1, 0},
		{"kv_aware without overlay", PolicyKVAware, 0, false, 8, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, tc.policy, func(c *Config) { c.Overlay.TTL = tc.ttl; c.SpreadMargin = tc.spread })
			cs := cands(8) // fresh, empty summaries: the prefix is new
			s := NewScratch(len(cs))
			seen := map[int]int{}
			for u := range uint32(6) {
				r := req(prompt(77, u, 375, 390))
				r.Now = t0.Add(time.Duration(u) * time.Millisecond)
				i, d, err := p.Pick(r, cs, s)
				if err != nil {
					t.Fatal(err)
				}
				// The lease the balancer takes; the prefill finishes before
				// the next request, but the summary has not caught up.
				tk := lease(cs[i].Own, d.UncachedTokens)
				cs[i].Own.Prefilled(d.UncachedTokens, tk, time.Time{})
				seen[i]++
			}
			if got := len(seen) == 1; got != tc.together || len(seen) > tc.homes {
				t.Errorf("burst placement %v: together = %v, want %v (at most %d replicas)", seen, got, tc.together, tc.homes)
			}
		})
	}
}

// overlayPrefix is the overlay's prediction for replica id, read the way the
// policies read it (lookup, as in predict.go).
func overlayPrefix(o *Overlay, hashes []kvblock.Hash, id string, now time.Time) int {
	for _, h := range o.lookup(hashes, now, nil) {
		if h.replica == hashID(id) {
			return h.blocks
		}
	}
	return 0
}

func TestOverlayLongestPrefix(t *testing.T) {
	cfg := DefaultConfig().Overlay
	long := prompt(5, 1, 300, 400) // 400 blocks: stride 16 (400/8 > 32)
	o := NewOverlay(cfg, 8)
	o.record(long, hashID("a"), t0, o.ttl)
	for _, tc := range []struct {
		name string
		q    []kvblock.Hash
		id   string
		at   time.Duration
		want int
	}{
		{"same prompt", long, "a", 0, 400},
		{"other replica", long, "b", 0, 0},
		{"expired", long, "a", cfg.TTL, 0},
		{"just alive", long, "a", cfg.TTL - time.Nanosecond, 400},
		{"shared 300 blocks, longer prompt: a grid point", prompt(5, 2, 300, 500), "a", 0, 288},
		{"shared 300 blocks, shorter prompt: finer grid, nested", prompt(5, 3, 300, 310), "a", 0, 288},
		{"shared prefix blocks only", prompt(5, 4, 9, 40), "a", 0, 8},
		{"nothing shared", prompt(6, 1, 300, 400), "a", 0, 0},
		{"empty", nil, "a", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := overlayPrefix(o, tc.q, tc.id, t0.Add(tc.at)); got != tc.want {
				t.Errorf("overlay prefix = %d, want %d", got, tc.want)
			}
		})
	}
}

// Prefix lengths remembered never exceed what was really shared (the
// overlay may undercount, never overcount), over random prompts.
func TestOverlayNeverOvercounts(t *testing.T) {
	cfg := DefaultConfig().Overlay
	cfg.Slots = 1 << 10 // collisions on purpose
	o := NewOverlay(cfg, 8)
	for g := range uint32(200) {
		o.record(prompt(g%13, g, int(g%97), int(g%97)+int(g%31)), hashID(fmt.Sprint("r", g%5)), t0, o.ttl)
	}
	for g := range uint32(300) {
		shared := int(g % 97)
		q := prompt(g%13, g+1000, shared, shared+40)
		for r := range 5 {
			got := overlayPrefix(o, q, fmt.Sprint("r", r), t0)
			// Anything recorded for group g%13 shares at most 96 blocks.
			if got > 96 || got > len(q) {
				t.Fatalf("group %d: %d blocks remembered, more than could be shared", g%13, got)
			}
		}
	}
}

// Concurrent records and lookups are race-free (run with -race) and a
// lookup never returns a torn entry.
func TestOverlayConcurrent(t *testing.T) {
	cfg := DefaultConfig().Overlay
	cfg.Slots = 64
	o := NewOverlay(cfg, 8)
	hs := prompt(1, 1, 64, 64)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				o.record(hs[:1+(i+w)%64], hashID("r"), t0, o.ttl)
				if got := overlayPrefix(o, hs, "r", t0); got > 64 {
					t.Errorf("torn read: %d blocks", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A prefix is remembered on two replicas at once (its home and a replica),
// a third placement evicts the older of the two, and a placement of another
// prefix in a full set evicts a dead entry first.
func TestOverlayTwoWays(t *testing.T) {
	cfg := DefaultConfig().Overlay
	cfg.Slots = 2 // one set: every prefix collides
	o := NewOverlay(cfg, 1)
	hs := prompt(1, 1, 1, 1)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	o.record(hs, hashID("a"), at(0), o.ttl)
	o.record(hs, hashID("b"), at(1), o.ttl)
	if overlayPrefix(o, hs, "a", at(2)) != 1 || overlayPrefix(o, hs, "b", at(2)) != 1 {
		t.Fatal("a prefix placed on a and b is not remembered on both")
	}
	o.record(hs, hashID("a"), at(3), o.ttl) // refresh: a is now the newer
	o.record(hs, hashID("c"), at(4), o.ttl) // evicts b, the older
	for id, want := range map[string]int{"a": 1, "b": 0, "c": 1} {
		if got := overlayPrefix(o, hs, id, at(5)); got != want {
			t.Errorf("after refresh and a third placement: overlay prefix on %s = %d, want %d", id, got, want)
		}
	}
	other := prompt(2, 2, 1, 1)
	late := at(3).Add(cfg.TTL) // a (recorded at 3 ms) is dead, c alive
	o.record(other, hashID("d"), late, o.ttl)
	if overlayPrefix(o, hs, "c", late) != 1 || overlayPrefix(o, other, "d", late) != 1 {
		t.Error("a new prefix did not take the dead slot")
	}
}

// Once its request got its first byte, a placement is remembered for Settle
// more, not the rest of its TTL; other replicas' placements of the same
// prompt keep theirs, and Settle 0 keeps the TTL.
func TestOverlaySettle(t *testing.T) {
	hs := prompt(1, 1, 64, 64)
	t0 := time.Unix(1000, 0)
	for _, settle := range []time.Duration{0, time.Second} {
		cfg := DefaultConfig().Overlay
		cfg.Settle = settle
		o := NewOverlay(cfg, 8)
		o.record(hs, hashID("a"), t0, o.ttl)
		o.record(hs, hashID("b"), t0, o.ttl)
		o.Settle(hs, "a", t0.Add(2*time.Second))
		at := func(d time.Duration, id string) int { return overlayPrefix(o, hs, id, t0.Add(d)) }
		if got := at(2500*time.Millisecond, "a"); got != 64 {
			t.Errorf("settle %v: within the grace the placement holds %d blocks, want 64", settle, got)
		}
		wantA := 0
		if settle == 0 {
			wantA = 64
		}
		if got := at(4*time.Second, "a"); got != wantA {
			t.Errorf("settle %v: after the grace the placement holds %d blocks, want %d", settle, got, wantA)
		}
		if got := at(4*time.Second, "b"); got != 64 {
			t.Errorf("settle %v: the other replica's placement holds %d blocks, want 64", settle, got)
		}
		if got := at(11*time.Second, "b"); got != 0 {
			t.Errorf("settle %v: past the TTL the placement holds %d blocks, want 0", settle, got)
		}
	}
}
