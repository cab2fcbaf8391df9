package route

import (
	"slices"
	"testing"
	"time"
)

// connect makes each policy's placements reach the others' Learn at the
// time of the placing request, as the gossip would (docs/routing.md).
func connect(t *testing.T, ps []Policy, now *time.Time) {
	t.Helper()
	for i, p := range ps {
		s, ok := p.(Sharer)
		if !ok {
			t.Fatalf("%s is not a Sharer", p.Name())
		}
		s.ShareTo(func(sh Shared) {
			sh.Points = slices.Clone(sh.Points)
			for j, q := range ps {
				if j != i {
					q.(Sharer).Learn(sh, *now)
				}
			}
		})
	}
}

// A burst sharing a new prefix, split over four balancers, lands on one
// replica when the balancers share their placements, and scatters when each
// knows only its own (each rotates a prompt it has not seen).
func TestSharedPlacementsColocateABurstAcrossBalancers(t *testing.T) {
	for _, tc := range []struct {
		policy   string
		share    bool
		together bool
	}{
		{PolicyCostModel, true, true},
		{PolicyCostModel, false, false},
		{PolicyKVAware, true, true},
	} {
		name := tc.policy
		if !tc.share {
			name += " not shared"
		}
		t.Run(name, func(t *testing.T) {
			var ps []Policy
			for b := range uint64(4) {
				ps = append(ps, newPolicy(t, tc.policy, func(c *Config) { c.Overlay.Share = tc.share; c.Seed = 1 + b*7919 }))
			}
			now := t0
			connect(t, ps, &now)
			cs := cands(8)
			seen := map[int]int{}
			for u := range uint32(8) {
				now = t0.Add(time.Duration(u) * time.Millisecond)
				r := req(prompt(77, u, 375, 390))
				r.Now = now
				i, d, err := ps[u%4].Pick(r, cs, NewScratch(len(cs)))
				if err != nil {
					t.Fatal(err)
				}
				if u > 0 && tc.together && d.CachedTokens != 16*368 {
					t.Errorf("request %d on balancer %d: predicted %d cached tokens, want the 368 shared blocks' %d", u, u%4, d.CachedTokens, 16*368)
				}
				tk := lease(cs[i].Own, d.UncachedTokens)
				cs[i].Own.Prefilled(d.UncachedTokens, tk, time.Time{})
				seen[i]++
			}
			if got := len(seen) == 1; got != tc.together {
				t.Errorf("burst placement %v: together = %v, want %v", seen, got, tc.together)
			}
		})
	}
}

// A placement another balancer learned settles when the placing balancer's
// request gets its first byte: past Settle the summary decides, on every
// balancer alike. A text identity's placement lasts TextTTL on both.
func TestSharedPlacementsSettleAndExpireAlike(t *testing.T) {
	a := newPolicy(t, PolicyCostModel, func(c *Config) { c.Seed = 1 })
	b := newPolicy(t, PolicyCostModel, func(c *Config) { c.Seed = 2 })
	now := t0
	connect(t, []Policy{a, b}, &now)
	cfg := DefaultConfig().Overlay
	cs := cands(4)
	hashes := prompt(9, 1, 200, 210)
	r := req(hashes)
	i, _ := mustPick(t, a, r, cs)
	id := cs[i].ID
	ob := overlayOf(b)
	if got := overlayPrefix(ob, hashes, id, t0); got != 210 {
		t.Fatalf("the other balancer predicts %d blocks on %s, want 210", got, id)
	}
	if got := overlayPrefix(ob, hashes, id, t0.Add(cfg.TTL-time.Millisecond)); got != 210 {
		t.Errorf("unsettled: %d blocks just before the TTL, want 210", got)
	}
	now = t0.Add(100 * time.Millisecond)
	a.(Settler).Settle(hashes, id, now)
	if got := overlayPrefix(ob, hashes, id, now.Add(cfg.Settle-time.Millisecond)); got != 210 {
		t.Errorf("settled: %d blocks within Settle, want 210", got)
	}
	if got := overlayPrefix(ob, hashes, id, now.Add(cfg.Settle)); got != 0 {
		t.Errorf("settled: %d blocks after Settle, want 0 (the summary decides)", got)
	}

	now = t0
	text := req(prompt(10, 1, 50, 60))
	text.TextPrefix = true
	j, _ := mustPick(t, a, text, cs)
	if got := overlayPrefix(ob, text.Hashes, cs[j].ID, t0.Add(cfg.TextTTL-time.Millisecond)); got != 60 {
		t.Errorf("text identity: the other balancer predicts %d blocks just before TextTTL, want 60", got)
	}
	if got := overlayPrefix(ob, text.Hashes, cs[j].ID, t0.Add(cfg.TextTTL)); got != 0 {
		t.Errorf("text identity: the other balancer predicts %d blocks at TextTTL, want 0", got)
	}
}

// The peer baselines keep their overlays to themselves; a dry run (explain)
// shares nothing.
func TestSharedPlacementsOnlyFromSharingPolicies(t *testing.T) {
	for _, name := range append(slices.Clone(Policies), Baselines...) {
		p := newPolicy(t, name, nil)
		sent := 0
		s, ok := p.(Sharer)
		if !ok {
			continue
		}
		s.ShareTo(func(Shared) { sent++ })
		cs := cands(4)
		dry := req(prompt(3, 1, 40, 50))
		dry.DryRun = true
		mustPick(t, p, dry, cs)
		if sent != 0 {
			t.Errorf("%s: a dry run shared %d placements", name, sent)
		}
		mustPick(t, p, req(prompt(3, 2, 40, 50)), cs)
		want := 0
		if name == PolicyCostModel || name == PolicyKVAware {
			want = 1
		}
		if sent != want {
			t.Errorf("%s: shared %d placements, want %d", name, sent, want)
		}
	}
}
