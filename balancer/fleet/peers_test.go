package fleet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/load"
)

// loadMsg encodes one load message as a sender writes it.
func loadMsg(flags byte, seq uint64, now time.Time, recs map[string]route.Work) []byte {
	s := loadSender{send: func([]byte) error { return nil }, seq: seq - 1}
	var out []byte
	s.send = func(b []byte) error { out = append([]byte(nil), b...); return nil }
	s.reset = flags&peerFlagReset != 0
	s.start()
	for id, w := range recs {
		s.msg = appendPeerRecord(s.msg, replicaKey(id), w, now)
		s.n++
	}
	s.flush()
	return out
}

// The other balancers' load as they sent it stands for their shares in the
// report: counted once, summed over the peers, and only while each peer was
// heard from within load_max_age; a reset clears what a peer does not name,
// an older message is dropped and a malformed one changes nothing.
func TestPeerLoadReplacesTheirShares(t *testing.T) {
	f, clk := newTestFleet(t, []Spec{spec("a", "m"), spec("b", "m")}, func(c *Config) {
		c.LoadMaxAge = time.Second
		c.Origin = "me"
	})
	set := f.Snapshot().Models["m"]
	a := set.Replicas[0]
	// The sidecar's last report: 6 in flight, 1 of them this balancer's.
	a.ObserveReport(load.Report{InFlight: 6, Pending: 4, PrefillTokens: 4000}, load.Share{Origin: "me", InFlight: 1, Pending: 1, PrefillTokens: 500}, clk.now())
	cand := func() route.Load { return set.Candidates(clk.now(), nil)[0].Load }
	if l := cand(); l.HasPeers {
		t.Fatalf("no peer heard from, but HasPeers: %+v", l)
	}

	step := clk.now().Add(-30 * time.Millisecond)
	w2 := route.Work{InFlight: 3, Pending: 2, PrefillTokens: 2500, StepTokens: 1000, StepStart: step, OutputReserve: 300}
	if err := f.LearnLoad("bal-2", loadMsg(peerFlagReset, 10, clk.now(), map[string]route.Work{"a": w2}), clk.now()); err != nil {
		t.Fatal(err)
	}
	w3 := route.Work{InFlight: 1, Pending: 1, PrefillTokens: 700}
	if err := f.LearnLoad("bal-3", loadMsg(0, 5, clk.now(), map[string]route.Work{"a": w3}), clk.now()); err != nil {
		t.Fatal(err)
	}
	l := cand()
	want := route.Work{InFlight: 4, Pending: 3, PrefillTokens: 3200, StepTokens: 1000, StepStart: step, OutputReserve: 300}
	if !l.HasPeers || !cmp.Equal(l.Peers, want, cmp.Comparer(func(x, y time.Time) bool { return x.Sub(y).Abs() < time.Microsecond })) {
		t.Fatalf("peers %+v (has %v), want %+v", l.Peers, l.HasPeers, want)
	}
	// The report has no breakdown by origin: the others' 5 less the peers' 4.
	if got := (route.Work{InFlight: 1, Pending: 0, PrefillTokens: 300}); l.Residual != got {
		t.Errorf("residual %+v, want %+v", l.Residual, got)
	}
	if b := set.Candidates(clk.now(), nil)[1].Load; !b.HasPeers || b.Peers != (route.Work{}) {
		t.Errorf("replica b, where no peer has work: %+v", b)
	}

	// An older message from bal-2 is dropped; a malformed one changes nothing.
	if err := f.LearnLoad("bal-2", loadMsg(0, 9, clk.now(), map[string]route.Work{"a": {InFlight: 50}}), clk.now()); err != nil {
		t.Fatal(err)
	}
	if err := f.LearnLoad("bal-2", []byte{0, 11, 1, 1, 2}, clk.now()); !errors.Is(err, errPeerLoad) {
		t.Errorf("a truncated message: err %v", err)
	}
	if got := cand().Peers.InFlight; got != 4 {
		t.Errorf("after a late and a malformed message: %d in flight, want 4", got)
	}
	// A reset from bal-3 that names nothing: it has no work anywhere.
	if err := f.LearnLoad("bal-3", loadMsg(peerFlagReset, 6, clk.now(), nil), clk.now()); err != nil {
		t.Fatal(err)
	}
	if got := cand().Peers.InFlight; got != 3 {
		t.Errorf("after bal-3's empty reset: %d in flight, want 3", got)
	}
	// bal-2 falls silent: its work lapses with load_max_age.
	clk.add(time.Second + time.Millisecond)
	if err := f.LearnLoad("bal-3", loadMsg(peerFlagReset, 7, clk.now(), nil), clk.now()); err != nil {
		t.Fatal(err)
	}
	if l := cand(); !l.HasPeers || l.Peers.InFlight != 0 {
		t.Errorf("bal-2 silent past load_max_age: %+v", l)
	}
	clk.add(time.Second + time.Millisecond)
	if l := cand(); l.HasPeers {
		t.Errorf("every peer silent past load_max_age, but HasPeers: %+v", l)
	}
}

// With a gossip report, which breaks its counts down by origin, the
// residual is the origins that are neither this balancer nor a fresh peer.
func TestPeerResidualFromTheOrigins(t *testing.T) {
	rep := load.Report{InFlight: 9, Pending: 6, PrefillTokens: 6000, Origins: []load.Share{
		{Origin: "me", InFlight: 2, Pending: 2, PrefillTokens: 2000},
		{Origin: "bal-2", InFlight: 4, Pending: 2, PrefillTokens: 1000},
		{Origin: "old", InFlight: 1, Pending: 1, PrefillTokens: 500},
	}}
	got := others(&rep, "me", []*peer{{name: "bal-2"}, {name: "bal-9"}})
	if want := (route.Work{InFlight: 3, Pending: 2, PrefillTokens: 3000}); got != want {
		t.Errorf("residual %+v, want %+v (the old origin and the requests of none)", got, want)
	}
}

// ShareLoad sends a replica's counts as they change, and every replica with
// work each period after a reset; another fleet that learns the messages
// sees this balancer's work at once, and none once it ends.
func TestShareLoadReachesAnotherFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, _ := newTestFleet(t, []Spec{spec("a", "m"), spec("b", "m")}, func(c *Config) { c.Now = time.Now; c.Origin = "src" })
		dst, _ := newTestFleet(t, []Spec{spec("a", "m"), spec("b", "m")}, func(c *Config) { c.Now = time.Now; c.Origin = "dst" })
		var mu sync.Mutex
		var sent []byte // the last message
		var msgs, resets int
		send := func(b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent[:0], b...)
			msgs++
			if b[0]&peerFlagReset != 0 {
				resets++
			}
			return dst.LearnLoad("src", b, time.Now())
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- src.ShareLoad(ctx, send, func() int { return 1 }, 100*time.Millisecond) }()
		seen := func() route.Work { return dst.Snapshot().Models["m"].Candidates(time.Now(), nil)[1].Load.Peers }

		answers := func() []route.PeerAnswer {
			pa := dst.Snapshot().Models["m"].Candidates(time.Now(), nil)[1].Load.PeerAnswers
			if pa == nil {
				return nil
			}
			return pa.AppendPeerAnswers(nil, time.Now())
		}
		rb := src.Snapshot().Models["m"].Replicas[1]
		ans := rb.Counters.Follow(300, 200)
		ticket, ok := rb.TryAcquire(3000, 200)
		if !ok {
			t.Fatal("TryAcquire refused")
		}
		synctest.Wait()
		if got, want := seen(), (route.Work{InFlight: 1, Pending: 1, PrefillTokens: 3000, OutputReserve: 200}); got != want {
			t.Fatalf("after the send, dst sees %+v, want %+v", got, want)
		}
		if got, want := answers(), []route.PeerAnswer{{Left: 300, Reserve: 200, At: time.Now()}}; !cmp.Equal(got, want) {
			t.Fatalf("after the send, dst holds answers %+v, want %+v", got, want)
		}
		mu.Lock()
		if msgs != 1 || resets != 0 {
			t.Errorf("%d messages (%d resets) before the first period, want 1 (0)", msgs, resets)
		}
		mu.Unlock()
		first := time.Now().Add(-5 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		ans.Tokens(first, 10)
		rb.Counters.Prefilled(3000, ticket, first)
		synctest.Wait()
		if got, want := answers(), []route.PeerAnswer{{Left: 290, Started: true, Reserve: 200, At: time.Now()}}; !cmp.Equal(got, want) {
			t.Errorf("after the first tokens, dst holds answers %+v, want %+v", got, want)
		}
		if got := seen(); got.Pending != 0 || got.InFlight != 1 || got.StepStart.Sub(first).Abs() > time.Microsecond {
			t.Errorf("after the first token, dst sees %+v (step start want %v)", got, first)
		}
		time.Sleep(150 * time.Millisecond) // a period: every replica with work, after a reset
		mu.Lock()
		if resets != 1 {
			t.Errorf("%d resets after a period, want 1", resets)
		}
		mu.Unlock()
		rb.Counters.Unfollow(ans)
		rb.Counters.Done(3000, 200, ticket, true)
		synctest.Wait()
		if got := answers(); len(got) != 0 {
			t.Errorf("after the request ended, dst holds answers %+v", got)
		}
		if got := seen(); got != (route.Work{}) {
			t.Errorf("after the request ended, dst sees %+v", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ShareLoad: %v", err)
		}
	})
}

// A message too large for one packet is split, the reset only on the first.
func TestShareLoadSplitsARound(t *testing.T) {
	var specs []Spec
	for i := range 120 {
		specs = append(specs, spec(string(rune('A'+i/26))+string(rune('a'+i%26)), "m"))
	}
	f, clk := newTestFleet(t, specs, nil)
	for _, r := range f.Snapshot().Replicas {
		r.TryAcquire(100, 10)
	}
	var bodies [][]byte
	s := loadSender{send: func(b []byte) error { bodies = append(bodies, append([]byte(nil), b...)); return nil }, log: t.Logf}
	s.round(f.Snapshot(), clk.now(), true)
	if len(bodies) < 2 {
		t.Fatalf("120 replicas in %d messages", len(bodies))
	}
	total := 0
	for i, b := range bodies {
		if len(b) > 1200 {
			t.Errorf("message %d of %d bytes", i, len(b))
		}
		flags, _, err := decodePeerLoad(b, clk.now(), func(peerRecord) { total++ })
		if err != nil {
			t.Fatal(err)
		}
		if (flags&peerFlagReset != 0) != (i == 0) {
			t.Errorf("message %d flags %#x", i, flags)
		}
	}
	if total != 120 {
		t.Errorf("%d records, want 120", total)
	}
}
