package balancer

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// shRecord is one decoded record with its model.
type shRecord struct {
	Model string
	S     route.Shared
}

func shDecode(t testing.TB, body []byte) ([]shRecord, error) {
	t.Helper()
	var out []shRecord
	err := decodePlacements(body, func(model string, s route.Shared) {
		s.Points = slices.Clone(s.Points)
		out = append(out, shRecord{model, s})
	})
	return out, err
}

// shRandom returns n records over models, with up to MaxSharedPoints points.
func shRandom(r *rand.Rand, n int, models ...string) []shRecord {
	var out []shRecord
	for range n {
		s := route.Shared{Kind: route.SharedKind(1 + r.IntN(3)), Replica: r.Uint64()}
		for b := range 1 + r.IntN(route.MaxSharedPoints) {
			s.Points = append(s.Points, route.SharedPoint{Hash: kvblock.Hash(r.Uint64()), Blocks: uint32(1 + b*r.IntN(1000))})
		}
		out = append(out, shRecord{models[r.IntN(len(models))], s})
	}
	return out
}

// shSend runs recs through a sharer's batching and returns the messages it
// sent.
func shSend(t testing.TB, recs []shRecord) [][]byte {
	t.Helper()
	var msgs [][]byte
	p := newPlacementSharer(func(b []byte) error {
		msgs = append(msgs, bytes.Clone(b))
		return nil
	}, func() int { return 1 }, slog.New(slog.NewTextHandler(io.Discard, nil)), newMetrics(nil))
	for _, r := range recs {
		p.add(r.Model, r.S)
	}
	p.mu.Lock()
	buf, refs := p.buf, p.recs
	p.mu.Unlock()
	p.send(buf, refs)
	return msgs
}

// Records batched into messages come out of the decoder as they went in, in
// order, and every message fits one gossip packet.
func TestSharedPlacementsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 40, 500} {
		recs := shRandom(r, n, "llama", "llama", "a-much-longer-model-name/with-an-adapter")
		msgs := shSend(t, recs)
		var got []shRecord
		for _, m := range msgs {
			if len(m) > gossip.MaxPlacementsBytes {
				t.Fatalf("a message of %d bytes, over %d", len(m), gossip.MaxPlacementsBytes)
			}
			d, err := shDecode(t, m)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d...)
		}
		if diff := cmp.Diff(recs, got); diff != "" {
			t.Errorf("%d records: decoded differ (-sent +got):\n%s", n, diff)
		}
		if n == 40 && len(msgs) < 2 {
			t.Errorf("40 records in %d message(s): not split", len(msgs))
		}
	}
}

func TestSharedPlacementsMalformed(t *testing.T) {
	rec := appendSharedRecord(nil, route.Shared{Kind: route.SharedPlace, Replica: 7,
		Points: []route.SharedPoint{{Hash: 1, Blocks: 8}, {Hash: 2, Blocks: 16}}})
	good := append(appendSharedGroup(nil, "m", 1), rec...)
	if _, err := shDecode(t, good); err != nil {
		t.Fatalf("the good body: %v", err)
	}
	kind := func(k byte) []byte { b := slices.Clone(good); b[3] = k; return b }
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"no model name", append(appendSharedGroup(nil, "", 1), rec...)},
		{"model name too long", append(appendSharedGroup(nil, string(make([]byte, maxSharedModel+1)), 1), rec...)},
		{"zero records", appendSharedGroup(nil, "m", 0)},
		{"fewer records than counted", append(appendSharedGroup(nil, "m", 2), rec...)},
		{"truncated", good[:len(good)-3]},
		{"trailing byte", append(slices.Clone(good), 1)},
		{"kind 0", kind(0)},
		{"kind 4", kind(4)},
		{"no points", appendSharedRecord(appendSharedGroup(nil, "m", 1), route.Shared{Kind: 1})},
		{"too many points", appendSharedRecord(appendSharedGroup(nil, "m", 1),
			route.Shared{Kind: 1, Points: make([]route.SharedPoint, route.MaxSharedPoints+1)})},
		{"a point of 0 blocks", appendSharedRecord(appendSharedGroup(nil, "m", 1),
			route.Shared{Kind: 1, Points: []route.SharedPoint{{Hash: 1}}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := shDecode(t, tc.body); !errors.Is(err, errPlacements) {
				t.Errorf("err = %v, want errPlacements", err)
			}
		})
	}
}

// FuzzDecodePlacements: no input panics or loops, and whatever decodes
// re-encodes to records that decode alike.
func FuzzDecodePlacements(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range shSend(f, shRandom(r, 12, "m", "other")) {
		f.Add(m)
	}
	f.Add([]byte{1, 'm', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, err := shDecode(t, body)
		if err != nil {
			if !errors.Is(err, errPlacements) {
				t.Fatalf("error %v does not wrap errPlacements", err)
			}
			return
		}
		var again []shRecord
		for _, m := range shSend(t, recs) {
			d, err := shDecode(t, m)
			if err != nil {
				t.Fatalf("re-encoded body does not decode: %v", err)
			}
			again = append(again, d...)
		}
		if diff := cmp.Diff(recs, again); diff != "" {
			t.Fatalf("re-encoded records differ:\n%s", diff)
		}
	})
}

// A request routed by one balancer is predicted cached on its replica by
// another that got the first's shared placement (explain, before any summary
// could say so), through the wire format; a placement for a model the
// receiver does not route is counted and dropped.
func TestSharedPlacementsReachTheOtherBalancersPolicy(t *testing.T) {
	ups := []*upstream{newUpstream(t, okHandler), newUpstream(t, okHandler)}
	cfg := testConfig(ups[0].srv.URL, ups[1].srv.URL)
	send, srv := newTestBalancer(t, cfg)
	recv, _ := newTestBalancer(t, cfg)
	admin := httptest.NewServer(recv.AdminHandler())
	t.Cleanup(admin.Close)
	var msgs [][]byte
	send.sharer = newPlacementSharer(func(b []byte) error { msgs = append(msgs, bytes.Clone(b)); return nil },
		func() int { return 1 }, slog.New(slog.NewTextHandler(io.Discard, nil)), send.m)
	send.shareModels(send.live.Load().models)

	before := explainOf(t, admin.URL, longChat)
	resp, _ := post(t, srv.URL+"/v1/chat/completions", longChat)
	placed := resp.Header.Get(HeaderReplica)
	p := send.sharer
	p.mu.Lock()
	buf, refs := p.buf, p.recs
	p.mu.Unlock()
	if len(refs) != 2 { // the placement, and its settling at the first byte
		t.Fatalf("%d records queued, want the placement and its settling", len(refs))
	}
	p.send(buf, refs)
	for _, m := range msgs {
		if err := recv.learnPlacements("other", m, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	after := explainOf(t, admin.URL, longChat)
	for _, c := range after.Candidates {
		want := 0
		if c.ID == placed {
			want = 16 * len(after.Blocks)
		}
		if c.CachedTokens == nil || *c.CachedTokens != want {
			t.Errorf("the receiving balancer predicts %v cached tokens on %s, want %d (placed on %s; before: %+v)", c.CachedTokens, c.ID, want, placed, before.Candidates)
		}
	}
	if got := testutil.ToFloat64(recv.m.sharedPlacements.WithLabelValues("learned")); got != 2 {
		t.Errorf("learned = %v, want 2", got)
	}
	other := append(appendSharedGroup(nil, "not-routed", 1), appendSharedRecord(nil, route.Shared{Kind: 1, Replica: 1,
		Points: []route.SharedPoint{{Hash: 1, Blocks: 1}}})...)
	if err := recv.learnPlacements("other", other, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(recv.m.sharedPlacements.WithLabelValues("unknown_model")); got != 1 {
		t.Errorf("unknown_model = %v, want 1", got)
	}
}

// A balancer with no other balancer alive builds and queues no placements;
// once one is alive it does.
func TestLoneBalancerQueuesNoPlacements(t *testing.T) {
	others := 0
	p := newPlacementSharer(func([]byte) error { return nil }, func() int { return others },
		slog.New(slog.NewTextHandler(io.Discard, nil)), newMetrics(nil))
	rec := route.Shared{Kind: route.SharedPlace, Replica: 1, Points: []route.SharedPoint{{Hash: 7, Blocks: 1}}}
	p.add("m", rec)
	if len(p.recs) != 0 || len(p.buf) != 0 {
		t.Fatalf("alone: %d records queued", len(p.recs))
	}
	others = 1
	p.add("m", rec)
	if len(p.recs) != 1 {
		t.Errorf("with another balancer: %d records queued, want 1", len(p.recs))
	}
}
