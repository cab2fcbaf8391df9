package route

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// lease counts a request with uncached prompt tokens on c, as a lease
// without caps does (production leases are taken by fleet.Replica.TryAcquire;
// route cannot import the fleet), and returns its ticket.
func lease(c *Counters, uncached int) Ticket {
	c.InFlight.Add(1)
	c.Pending.Add(1)
	return c.Sent(uncached)
}

// fakeIndex is a PrefixIndex holding an exact set of block hashes.
type fakeIndex map[kvblock.Hash]bool

func (f fakeIndex) LongestPrefix(hashes []kvblock.Hash) int {
	for i, h := range hashes {
		if !f[h] {
			return i
		}
	}
	return len(hashes)
}

// add records every hash of hashes and returns f.
func (f fakeIndex) add(hashes []kvblock.Hash) fakeIndex {
	for _, h := range hashes {
		f[h] = true
	}
	return f
}

// prompt returns the chained hashes of a prompt of total blocks whose first
// shared blocks come from prefix group and the rest from unique.
func prompt(group, unique uint32, shared, total int) []kvblock.Hash {
	hs := make([]kvblock.Hash, 0, total)
	h := kvblock.NewSeed("m", "", "")
	for i := range total {
		tok := []uint32{group, uint32(i)}
		if i >= shared {
			tok = []uint32{unique | 1<<31, uint32(i)}
		}
		h = kvblock.Next(h, tok)
		hs = append(hs, h)
	}
	return hs
}

// cands returns n healthy candidates r0..r(n-1) serving model "m", each with
// its own counters and a fresh, empty summary.
func cands(n int) []Candidate {
	cs := make([]Candidate, n)
	for i := range cs {
		cs[i] = Candidate{
			ID:      fmt.Sprintf("r%d", i),
			Models:  []string{"m"},
			Healthy: true,
			Own:     &Counters{},
			Prefix:  fakeIndex{},
			Load:    Load{Known: true},
		}
	}
	Prepare(cs)
	return cs
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newPolicy returns the named policy over DefaultConfig with edit applied.
func newPolicy(t testing.TB, name string, edit func(*Config)) Policy {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = name
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return p
}

// req returns a request for model "m" over hashes at t0.
func req(hashes []kvblock.Hash) *Request {
	return &Request{Model: "m", Hashes: hashes, BlockSize: 16, PromptTokens: 16 * len(hashes), Now: t0}
}

// mustPick picks and fails the test on error.
func mustPick(t testing.TB, p Policy, r *Request, cs []Candidate) (int, Decision) {
	t.Helper()
	i, d, err := p.Pick(r, cs, &Scratch{})
	if err != nil {
		t.Fatalf("%s.Pick: %v", p.Name(), err)
	}
	return i, d
}

// allPolicies returns the production policies and the peer baselines.
func allPolicies() []string { return append(slices.Clone(Policies), Baselines...) }

// overlayOf returns p's overlay (nil: none).
func overlayOf(p Policy) *Overlay {
	if o, ok := p.(interface{ overlayOf() *Overlay }); ok {
		return o.overlayOf()
	}
	return nil
}
