package gossip_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inferrail/inferrail/gossip"
	"github.com/inferrail/inferrail/gossip/gossiptest"
	"github.com/inferrail/inferrail/gossip/summary"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/prometheus/client_golang/prometheus"
)

// freshness records, per delta, when each balancer applied it.
type freshness struct {
	balancers int
	mu        sync.Mutex // protects seen
	seen      map[string]*applied
}

type applied struct {
	oldest, last time.Time
	count        int
}

func (f *freshness) SummaryApplied(from string, epoch, seq uint64, oldest, at time.Time) {
	if oldest.IsZero() {
		return // a snapshot
	}
	k := fmt.Sprintf("%s/%d/%d", from, epoch, seq)
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.seen[k]
	if a == nil {
		a = &applied{oldest: oldest}
		f.seen[k] = a
	}
	a.count++
	if at.After(a.last) {
		a.last = at
	}
}

// counter sums a counter's samples whose labels include want.
func counter(reg *prometheus.Registry, name string, want map[string]string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// scaleResult is what one scale run measured.
type scaleResult struct {
	p50, p99, max          time.Duration
	deltas, partial        int
	sidecarOut             float64 // transport bytes/s sent per sidecar
	payloadPerPair         float64 // inferrail message bytes/s per sidecar per balancer
	balancerIn             float64 // transport bytes/s received per balancer
	drops                  int64
	converged, summariesAt time.Duration
}

// runScale starts sidecars and balancers on the in-memory transport with
// encryption on and the LAN timing profile, waits until every balancer holds
// every sidecar's summary and 15 s more for join-time gossip to drain, then
// has each sidecar add rate new blocks per second for duration. Freshness is measured from a block's addition on the
// sidecar until the last balancer applied the delta carrying it.
func runScale(tb testing.TB, sidecars, balancers, rate int, duration time.Duration) scaleResult {
	var res scaleResult
	fr := &freshness{balancers: balancers, seen: make(map[string]*applied)}
	regs := make([]*prometheus.Registry, sidecars+balancers)
	key := []byte("0123456789abcdef")
	t0 := time.Now()
	c := gossiptest.Start(tb, gossiptest.Options{
		Sidecars: sidecars, Balancers: balancers, StartInterval: 20 * time.Millisecond,
		Registerer: func(i int) prometheus.Registerer { regs[i] = prometheus.NewRegistry(); return regs[i] },
		Configure: func(i int, cfg *gossip.Config) {
			cfg.Profile = gossip.ProfileLAN
			cfg.SecretKey = key
			cfg.Observer = fr
		},
	})
	defer c.Stop()
	balNodes := c.Nodes[sidecars:]
	allSeen := func() bool {
		for _, bn := range balNodes {
			n := 0
			for _, m := range bn.Peers().View().Members {
				if m.Status == gossip.StatusAlive && m.Meta.Role == gossip.RoleSidecar {
					n++
				}
			}
			if n != sidecars {
				return false
			}
		}
		return true
	}
	if !gossiptest.WaitFor(300*time.Second, 100*time.Millisecond, allSeen) {
		tb.Fatal("balancers did not see every sidecar within 300s")
	}
	res.converged = time.Since(t0)
	builders := make([]*summary.Builder, sidecars)
	for i := range builders {
		bl, err := summary.NewBuilder(summary.DefaultConfig(), nil)
		if err != nil {
			tb.Fatal(err)
		}
		builders[i] = bl
		c.Nodes[i].SetSummarySource(bl)
	}
	allFresh := func() bool {
		now := time.Now()
		for _, bn := range balNodes {
			for _, m := range bn.Peers().View().Members {
				if m.Meta.Role == gossip.RoleSidecar {
					if _, ok := m.Summary(now); !ok {
						return false
					}
				}
			}
		}
		return true
	}
	if !gossiptest.WaitFor(120*time.Second, 100*time.Millisecond, allFresh) {
		tb.Fatal("balancers did not get every summary within 120s")
	}
	res.summariesAt = time.Since(t0)
	// Let the join-time gossip drain (every node's alive message, and the
	// metadata update each sidecar made when its summary source was set, are
	// retransmitted 4 x log10(N) times): measure the steady state.
	settleIn := time.NewTimer(15 * time.Second)
	<-settleIn.C
	out := func(i int) float64 {
		return counter(regs[i], "inferrail_gossip_transport_bytes_total", map[string]string{"dir": "out"})
	}
	in := func(i int) float64 {
		return counter(regs[i], "inferrail_gossip_transport_bytes_total", map[string]string{"dir": "in"})
	}
	payload := func(i int) float64 {
		return counter(regs[i], "inferrail_gossip_message_bytes_total", map[string]string{"dir": "out"})
	}
	before := make([][3]float64, len(regs))
	for i := range regs {
		before[i] = [3]float64{out(i), in(i), payload(i)}
	}
	fr.mu.Lock()
	clear(fr.seen)
	fr.mu.Unlock()

	// Feed: every 10 ms each sidecar gets rate/100 new blocks.
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	for time.Since(start) < duration {
		<-tick.C
		for _, bl := range builders {
			for range rate / 100 {
				bl.Add(kvblock.Hash(r.Uint64()), summary.MediumGPU)
			}
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	settle := time.NewTimer(time.Second)
	<-settle.C

	var sideOut, sidePayload, balIn float64
	for i := range regs {
		if i < sidecars {
			sideOut += out(i) - before[i][0]
			sidePayload += payload(i) - before[i][2]
		} else {
			balIn += in(i) - before[i][1]
		}
	}
	secs := elapsed.Seconds()
	res.sidecarOut = sideOut / float64(sidecars) / secs
	res.payloadPerPair = sidePayload / float64(sidecars) / float64(balancers) / secs
	res.balancerIn = balIn / float64(balancers) / secs
	fr.mu.Lock()
	var lags []time.Duration
	for _, a := range fr.seen {
		if a.count < balancers {
			res.partial++
			continue
		}
		lags = append(lags, a.last.Sub(a.oldest))
	}
	fr.mu.Unlock()
	slices.Sort(lags)
	res.deltas = len(lags)
	if len(lags) > 0 {
		res.p50, res.p99, res.max = percentile(lags, 0.50), percentile(lags, 0.99), lags[len(lags)-1]
	}
	res.drops = c.Network.Dropped.Load()
	return res
}

func (r scaleResult) String() string {
	return fmt.Sprintf("converged %v, summaries %v; freshness p50 %v p99 %v max %v over %d deltas (%d not everywhere); "+
		"sidecar sends %.0f B/s (%.0f B/s per balancer), payload %.0f B/s per replica per balancer; balancer receives %.0f B/s; %d queue drops",
		r.converged.Round(time.Millisecond), r.summariesAt.Round(time.Millisecond), r.p50, r.p99, r.max, r.deltas, r.partial,
		r.sidecarOut, r.sidecarOut/4, r.payloadPerPair, r.balancerIn, r.drops)
}

// scaleOut makes TestScale write its figures as JSON (BenchmarkScale reads
// them).
var scaleOut = flag.String("gossip.scale-out", "", "file TestScale writes its figures to, as JSON")

// TestScale runs 200 sidecars and 4 balancers in fake time (synctest), so
// the figures are the protocol's (timers, batching, sizes) and not the test
// machine's CPU: freshness p99 <= 300 ms and <= 20 KB/s per replica per
// balancer at 2,000 new blocks/s per replica. With -short or -race it runs
// 40 sidecars.
func TestScale(t *testing.T) {
	sidecars := 200
	if testing.Short() || raceEnabled {
		sidecars = 40
	}
	synctest.Test(t, func(t *testing.T) {
		r := runScale(t, sidecars, 4, 2000, 3*time.Second)
		t.Logf("%d sidecars, 4 balancers, 2000 blocks/s each: %v", sidecars, r)
		if r.p99 > 300*time.Millisecond {
			t.Errorf("freshness p99 %v > 300ms", r.p99)
		}
		if perPair := r.sidecarOut / 4; perPair > 20_000 {
			t.Errorf("%.0f B/s per replica per balancer > 20 KB/s", perPair)
		}
		if r.partial > 0 || r.deltas == 0 {
			t.Errorf("%d deltas reached every balancer, %d did not", r.deltas, r.partial)
		}
		if *scaleOut != "" {
			b, _ := json.Marshal(map[string]float64{
				"sidecars":                     float64(sidecars),
				"fresh_p50_ms":                 float64(r.p50) / 1e6,
				"fresh_p99_ms":                 float64(r.p99) / 1e6,
				"fresh_max_ms":                 float64(r.max) / 1e6,
				"B/s/replica/balancer":         r.sidecarOut / 4,
				"payload_B/s/replica/balancer": r.payloadPerPair,
				"balancer_in_B/s":              r.balancerIn,
				"deltas":                       float64(r.deltas),
			})
			if err := os.WriteFile(*scaleOut, b, 0o644); err != nil {
				t.Error(err)
			}
		}
	})
}

// BenchmarkScale reports TestScale's fake-time figures (200 sidecars, 4
// balancers, 2,000 new blocks/s per sidecar) as benchmark metrics; it runs
// TestScale in a child process because synctest needs a *testing.T.
//
//	go test -run '^$' -bench 'BenchmarkScale$' -benchtime 1x ./gossip/
func BenchmarkScale(b *testing.B) {
	for b.Loop() {
		f := filepath.Join(b.TempDir(), "scale.json")
		out, err := exec.Command(os.Args[0], "-test.run=^TestScale$", "-test.count=1", "-gossip.scale-out="+f).CombinedOutput()
		if err != nil {
			b.Fatalf("TestScale: %v\n%s", err, out)
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var m map[string]float64
		if err := json.Unmarshal(raw, &m); err != nil {
			b.Fatal(err)
		}
		for k, v := range m {
			b.ReportMetric(v, k)
		}
	}
}

// scaleSidecars sizes BenchmarkScaleRealTime.
var scaleSidecars = flag.Int("gossip.scale-sidecars", 100, "sidecars in BenchmarkScaleRealTime")

// BenchmarkScaleRealTime runs the scale scenario in real time: the figures
// include this machine's CPU and scheduling (204 memberlist nodes in one
// process need an otherwise idle machine to converge).
//
//	go test -run '^$' -bench BenchmarkScaleRealTime -benchtime 1x ./gossip/ -args -gossip.scale-sidecars=200
func BenchmarkScaleRealTime(b *testing.B) {
	for b.Loop() {
		r := runScale(b, *scaleSidecars, 4, 2000, 5*time.Second)
		b.Log(r)
		b.ReportMetric(float64(r.p50)/1e6, "fresh_p50_ms")
		b.ReportMetric(float64(r.p99)/1e6, "fresh_p99_ms")
		b.ReportMetric(r.sidecarOut/4, "B/s/replica/balancer")
		b.ReportMetric(r.payloadPerPair, "payload_B/s/replica/balancer")
		b.ReportMetric(r.balancerIn, "balancer_in_B/s")
	}
}
