package balancer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferrail/inferrail/balancer/epp"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

// eppTestConfig is testConfig with n static replicas at urls, all cost_model.
func eppTestConfig(urls ...string) Config {
	cfg := testConfig(urls...)
	cfg.Routing.DefaultPolicy = route.PolicyCostModel
	return cfg
}

// eppPick asks p like the ext_proc server does for a chat body.
func eppPick(t *testing.T, p *eppPicker, body string, sub epp.Subset) (*epp.Pick, error) {
	t.Helper()
	return p.Pick(t.Context(), &epp.Request{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{},
		Body: []byte(body), Subset: sub})
}

// TestEPPDecisionsEqualProxy routes the same sequence of requests through
// proxy mode (HTTP, to fake engines) and through the endpoint picker, on two
// balancers built from one config with one clock and the same background
// load on each step: cost_model picks the same replica with the same
// prediction in both modes, request after request, while its overlay and the
// counts move.
func TestEPPDecisionsEqualProxy(t *testing.T) {
	var urls []string
	for range 4 {
		urls = append(urls, newUpstream(t, okHandler).srv.URL)
	}
	cfg := eppTestConfig(urls...)
	proxyB, srv := newTestBalancer(t, cfg)
	eppB, _ := newTestBalancer(t, cfg)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano()) // proxy mode arms real timers from it
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	proxyB.now, eppB.now = now, now
	picker := &eppPicker{b: eppB}

	r := rand.New(rand.NewPCG(7, 8))
	seen := map[string]bool{}
	for i := range 60 {
		clock.Add(int64(time.Duration(r.IntN(400)) * time.Millisecond))
		// Background load: the same in-flight work on the same replicas
		// of both balancers, held through this step.
		var held []func()
		for j := range 4 {
			n, uncached := r.IntN(3), r.IntN(4000)
			for range n {
				pr, er := proxyB.fleet.Snapshot().Replicas[j], eppB.fleet.Snapshot().Replicas[j]
				pt, pok := pr.TryAcquire(uncached, 0)
				et, eok := er.TryAcquire(uncached, 0)
				if !pok || !eok {
					t.Fatal("TryAcquire without caps failed")
				}
				held = append(held, func() { pr.Counters.Done(uncached, 0, pt, false); er.Counters.Done(uncached, 0, et, false) })
			}
		}
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":"question %d"}],"max_tokens":3}`,
			strings.Repeat(fmt.Sprintf("shared document %d. ", r.IntN(5)), 40+r.IntN(40)), i)

		resp, _ := post(t, srv.URL+"/v1/chat/completions", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: proxy status %d", i, resp.StatusCode)
		}
		wantID, wantCached := resp.Header.Get(HeaderReplica), resp.Header.Get(HeaderCachedTokens)

		pk, err := eppPick(t, picker, body, epp.Subset{})
		if err != nil {
			t.Fatalf("request %d: EPP pick: %v", i, err)
		}
		rep := picker.index(eppB.fleet.Snapshot()).byAddr[pk.Endpoints[0]]
		l := pk.Lease.(*eppLease)
		l.Served(pk.Endpoints[0], 200)
		l.Prefilled(true)
		l.Done()
		if rep == nil || rep.ID != wantID || strconv.Itoa(l.cur.cached) != wantCached {
			t.Fatalf("request %d: EPP picked %v (%d cached), proxy %s (%s cached)", i, pk.Endpoints, l.cur.cached, wantID, wantCached)
		}
		seen[wantID] = true
		for _, f := range held {
			f()
		}
	}
	if len(seen) < 2 {
		t.Fatalf("every request went to %v: the sequence does not exercise the policy", seen)
	}
}

// TestEPPPicker checks the picker's answers: the endpoint list with its
// fallbacks, the subset, the alias rewrite, and its refusals.
func TestEPPPicker(t *testing.T) {
	var urls []string
	for range 3 {
		urls = append(urls, newUpstream(t, okHandler).srv.URL)
	}
	cfg := eppTestConfig(urls...)
	b, _ := newTestBalancer(t, cfg)
	p := &eppPicker{b: b}
	snap := b.fleet.Snapshot()
	ix := p.index(snap)
	ep := func(i int) string { return ix.of[snap.Replicas[i]] }

	t.Run("fallbacks", func(t *testing.T) {
		pk, err := eppPick(t, p, chatBody, epp.Subset{})
		if err != nil {
			t.Fatal(err)
		}
		defer pk.Lease.Done()
		if len(pk.Endpoints) != 3 || pk.Body != nil || pk.Model != "" {
			t.Fatalf("pick %+v, want the pick and two fallbacks, body unchanged", pk)
		}
		seen := map[string]bool{}
		for _, e := range pk.Endpoints {
			if seen[e] || ix.byAddr[e] == nil {
				t.Fatalf("endpoints %v: repeated or unknown", pk.Endpoints)
			}
			seen[e] = true
		}
	})
	t.Run("subset", func(t *testing.T) {
		pk, err := eppPick(t, p, chatBody, epp.Subset{Set: true, Endpoints: []string{ep(2)}})
		if err != nil {
			t.Fatal(err)
		}
		defer pk.Lease.Done()
		if len(pk.Endpoints) != 1 || pk.Endpoints[0] != ep(2) {
			t.Fatalf("endpoints %v, want only %s", pk.Endpoints, ep(2))
		}
	})
	t.Run("alias", func(t *testing.T) {
		pk, err := eppPick(t, p, strings.Replace(chatBody, `"model":"m"`, `"model":"alias-m"`, 1), epp.Subset{})
		if err != nil {
			t.Fatal(err)
		}
		defer pk.Lease.Done()
		if pk.Model != "m" || !strings.Contains(string(pk.Body), `"model":"m"`) {
			t.Fatalf("alias: model %q body %s", pk.Model, pk.Body)
		}
	})
	for _, tc := range []struct {
		name   string
		path   string
		body   string
		sub    epp.Subset
		status int
	}{
		{"empty subset", "/v1/chat/completions", chatBody, epp.Subset{Set: true}, 503},
		{"foreign subset", "/v1/chat/completions", chatBody, epp.Subset{Set: true, Endpoints: []string{"192.0.2.1:80"}}, 503},
		{"unknown model", "/v1/chat/completions", `{"model":"nope","messages":[]}`, epp.Subset{}, 404},
		{"bad body", "/v1/chat/completions", `[1]`, epp.Subset{}, 400},
		{"unknown path", "/v1/other", chatBody, epp.Subset{}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Pick(t.Context(), &epp.Request{Path: tc.path, Header: http.Header{}, Body: []byte(tc.body), Subset: tc.sub})
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.Status != tc.status {
				t.Fatalf("err %v, want status %d", err, tc.status)
			}
		})
	}
	t.Run("bodyless", func(t *testing.T) {
		pk, err := p.Pick(t.Context(), &epp.Request{Method: "GET", Path: "/v1/models", Header: http.Header{}})
		if err != nil || len(pk.Endpoints) == 0 {
			t.Fatalf("pick %+v, err %v", pk, err)
		}
		pk.Lease.Done()
	})
}

// TestEPPShedAndSettle fills every replica's one slot with leases (429
// after), moves a lease to the fallback the gateway reports it served, and
// releases every count at the end.
func TestEPPShedAndSettle(t *testing.T) {
	cfg := eppTestConfig(newUpstream(t, okHandler).srv.URL, newUpstream(t, okHandler).srv.URL)
	for i := range cfg.Replicas {
		cfg.Replicas[i].MaxConcurrency = 1
	}
	b, _ := newTestBalancer(t, cfg)
	p := &eppPicker{b: b}
	first, err := eppPick(t, p, chatBody, epp.Subset{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Endpoints) != 2 {
		t.Fatalf("endpoints %v, want the pick and the other replica", first.Endpoints)
	}
	snap := b.fleet.Snapshot()
	ix := p.index(snap)
	primary, fallback := ix.byAddr[first.Endpoints[0]], ix.byAddr[first.Endpoints[1]]
	l := first.Lease.(*eppLease)
	l.Served(first.Endpoints[1], 200) // the gateway retried on the fallback
	if primary.Counters.InFlight.Load() != 0 || fallback.Counters.InFlight.Load() != 1 || fallback.Counters.Pending.Load() != 1 {
		t.Fatalf("after served by the fallback: primary %d in flight, fallback %d (%d pending)",
			primary.Counters.InFlight.Load(), fallback.Counters.InFlight.Load(), fallback.Counters.Pending.Load())
	}
	// The output reserve (chatBody's max_tokens 3) moves with the lease.
	if p, f := primary.Counters.OutputReserve.Load(), fallback.Counters.OutputReserve.Load(); p != 0 || f != 3 {
		t.Fatalf("after served by the fallback: output reserve %d on the primary, %d on the fallback, want 0 and 3", p, f)
	}
	l.Prefilled(true)
	if fallback.Counters.Pending.Load() != 0 || fallback.Counters.PendingPrefillTokens.Load() != 0 {
		t.Fatalf("after the first byte: %d pending, %d pending prefill tokens", fallback.Counters.Pending.Load(), fallback.Counters.PendingPrefillTokens.Load())
	}
	second, err := eppPick(t, p, chatBody, epp.Subset{})
	if err != nil {
		t.Fatal(err)
	}
	if ix.byAddr[second.Endpoints[0]] != primary {
		t.Fatalf("second pick %v, want the free replica %s", second.Endpoints, primary.ID)
	}
	_, err = eppPick(t, p, chatBody, epp.Subset{})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.Status != http.StatusTooManyRequests {
		t.Fatalf("third pick with every slot taken: %v, want 429", err)
	}
	l.Done()
	second.Lease.Done()
	for _, rep := range snap.Replicas {
		c := &rep.Counters
		if c.InFlight.Load() != 0 || c.Pending.Load() != 0 || c.PendingPrefillTokens.Load() != 0 || c.OutputReserve.Load() != 0 {
			t.Errorf("%s: counts left %d/%d/%d/%d", rep.ID, c.InFlight.Load(), c.Pending.Load(), c.PendingPrefillTokens.Load(), c.OutputReserve.Load())
		}
	}
	metrics := scrape(t, b)
	for _, want := range []string{
		`inferrail_balancer_requests_total{mode="epp",model="m",outcome="ok",route="chat"} 1`,
		`inferrail_balancer_requests_total{mode="epp",model="m",outcome="client_gone",route="chat"} 1`,
		// Every slot taken is the caps' refusal, as in proxy mode, not a shed.
		`inferrail_balancer_requests_total{mode="epp",model="m",outcome="full",route="chat"} 1`,
		`inferrail_balancer_route_decision_seconds_count{mode="epp",model="m",policy="cost_model"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// scrape returns b's metrics page.
func scrape(t *testing.T, b *Balancer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "/metrics", nil)
	b.AdminHandler().ServeHTTP(rec, req)
	return rec.Body.String()
}
