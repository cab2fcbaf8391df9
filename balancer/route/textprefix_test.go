package route

import (
	"testing"
	"time"
)

// textReq returns a text prefix request over hashes at now.
func textReq(r *Request, now time.Time) *Request {
	r.TextPrefix, r.Now = true, now
	return r
}

// A text prefix identity is remembered where it went for text_ttl, past the
// block hashes' ttl, with its predicted cached tokens; then it is forgotten.
func TestTextPrefixPlacementOutlivesTTL(t *testing.T) {
	for _, policy := range []string{PolicyCostModel, PolicyKVAware, PolicyDynamoKV, PolicyLLMD} {
		t.Run(policy, func(t *testing.T) {
			// Block hashes: the placement is forgotten after ttl.
			p := newPolicy(t, policy, nil) // ttl 10s, text_ttl 2m
			cs := cands(4)
			mustPick(t, p, req(prompt(9, 1, 180, 196)), cs)
			r := req(prompt(9, 2, 180, 196))
			r.Now = t0.Add(30 * time.Second)
			if _, d := mustPick(t, p, r, cs); d.CachedTokens != 0 {
				t.Errorf("block hashes: 30 s later %d cached tokens are predicted, want 0 (ttl 10s)", d.CachedTokens)
			}

			p = newPolicy(t, policy, nil)
			cs = cands(4)
			first, _ := mustPick(t, p, textReq(req(prompt(9, 1, 180, 196)), t0), cs)
			// Load the first home a little, as the next request finds it.
			lease(cs[first].Own, 64)
			at := t0.Add(30 * time.Second)
			i, d := mustPick(t, p, textReq(req(prompt(9, 3, 180, 196)), at), cs)
			if i != first {
				t.Errorf("30 s later the shared prefix went to %s, its home is %s", cs[i].ID, cs[first].ID)
			}
			if d.CachedTokens < 176*16 {
				t.Errorf("predicted %d cached tokens, want at least the %d of the remembered prefix", d.CachedTokens, 176*16)
			}
			if d.SummaryFallback {
				t.Error("a text prefix decision was reported as a summary fallback")
			}
			late := t0.Add(30*time.Second + 2*time.Minute + time.Second)
			_, d = mustPick(t, p, textReq(req(prompt(9, 4, 180, 196)), late), cs)
			if max := DefaultConfig().PrefixBlocks * 16; d.CachedTokens > max {
				t.Errorf("after text_ttl the prediction is %d cached tokens, want at most the prefix_hash owner's %d", d.CachedTokens, max)
			}
		})
	}
}

// The candidates' summaries are never asked for a text prefix identity (no
// summary can hold one), and a candidate's block size does not hide the
// overlay's memory.
func TestTextPrefixIgnoresSummariesAndBlockSizes(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, nil)
	cs := cands(3)
	hs := prompt(4, 1, 100, 120)
	cs[2].Prefix = fakeIndex{}.add(hs) // a false match, were it asked
	for i := range cs {
		cs[i].BlockSize = 32
	}
	r := textReq(req(hs), t0)
	i, d := mustPick(t, p, r, cs)
	for k, c := range d.Cached {
		if k != i && c > int32(DefaultConfig().PrefixBlocks*16) {
			t.Errorf("candidate %s predicted %d cached tokens from its summary", cs[k].ID, c)
		}
	}
	_, d = mustPick(t, p, textReq(req(hs), t0.Add(time.Second)), cs)
	if d.CachedTokens < 112*16 {
		t.Errorf("repeat predicted %d cached tokens with block size 32 candidates, want the overlay's %d", d.CachedTokens, 112*16)
	}
}
