package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// btBalancer is a running `inferrail balancer`.
type btBalancer struct {
	proc       *scProc
	url, admin string
	gossip     string
}

// btConfig is the balancer config used by these tests: model e2e-model with
// the builtin:sim tokenizer, gossip on loopback with local timings, probes
// every probeInterval ("0s": none) and a short first-byte timeout.
func btConfig(listen, admin, gossip string, join []string, probeInterval string) string {
	j, _ := json.Marshal(join)
	return fmt.Sprintf(`listen: %s
admin: %s
models:
  - name: e2e-model
    tokenizer: builtin:sim
    block_size: 16
gossip:
  enabled: true
  bind: %s
  join: %s
  profile: local
health:
  probe_interval: %s
  probe_timeout: 300ms
  failure_threshold: 2
  base_ejection: 5s
timeouts:
  upstream:
    first_byte: 2s
`, listen, admin, gossip, j, probeInterval)
}

func btStartBalancer(t *testing.T, bin, name string, join []string, probeInterval string) *btBalancer {
	t.Helper()
	return btStartBalancerRouting(t, bin, name, join, probeInterval, "")
}

// btStartBalancerRouting is btStartBalancer with routing, a YAML flow
// mapping of models[].routing keys ("": the defaults), for e2e-model.
func btStartBalancerRouting(t *testing.T, bin, name string, join []string, probeInterval, routing string) *btBalancer {
	t.Helper()
	l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
	b := &btBalancer{url: fmt.Sprintf("http://127.0.0.1:%d", l), admin: fmt.Sprintf("http://127.0.0.1:%d", a),
		gossip: fmt.Sprintf("127.0.0.1:%d", g)}
	path := filepath.Join(t.TempDir(), name+".yaml")
	cfg := btConfig(fmt.Sprintf("127.0.0.1:%d", l), fmt.Sprintf("127.0.0.1:%d", a), b.gossip, join, probeInterval)
	if routing != "" {
		cfg = strings.Replace(cfg, "    block_size: 16\n", "    block_size: 16\n    routing: "+routing+"\n", 1)
	}
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	b.proc = scStart(t, bin, name, "balancer", "--config", path, "--node-name", name, "--log-level", "debug")
	scWait(t, name+" admin", func() error {
		resp, err := http.Get(b.admin + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return b
}

// btStartSim starts a simulator with KV events, usage cached_tokens and a
// small KV cache (eviction pressure).
func btStartSim(t *testing.T, bin, name string, blocks int, extra ...string) *scSim {
	t.Helper()
	s := &scSim{bin: bin, port: scFreePort(t), pub: scFreePort(t), replay: scFreePort(t)}
	s.url = fmt.Sprintf("http://127.0.0.1:%d", s.port)
	s.kvEventsConfigString = fmt.Sprintf(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:%d","replay_endpoint":"tcp://*:%d"}`, s.pub, s.replay)
	args := append([]string{"sim", "--host", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--served-model-name", "e2e-model", "--block-size", "16", "--num-gpu-blocks-override", strconv.Itoa(blocks),
		"--enable-prompt-tokens-details", "--kv-events-config", s.kvEventsConfigString}, extra...)
	s.proc = scStart(t, bin, name, args...)
	scWaitOK(t, name+" health", s.url+"/health")
	return s
}

// btFleet is sims, their sidecars and balancers, all on loopback.
type btFleet struct {
	bin      string
	sims     []*scSim
	sidecars []*scSidecar
	bals     []*btBalancer
}

// btStartFleet starts n sims with sidecars and the named balancers; the
// sidecars join the first balancer's gossip, later balancers join it too.
func btStartFleet(t *testing.T, bin string, n, blocks int, balancers []string, simArgs ...string) *btFleet {
	t.Helper()
	return btStartFleetWith(t, bin, n, blocks, balancers, nil, simArgs...)
}

// btStartFleetWith is btStartFleet with sidecarArgs added to every sidecar's.
func btStartFleetWith(t *testing.T, bin string, n, blocks int, balancers, sidecarArgs []string, simArgs ...string) *btFleet {
	t.Helper()
	f := &btFleet{bin: bin}
	for i, name := range balancers {
		var join []string
		if i > 0 {
			join = []string{f.bals[0].gossip}
		}
		f.bals = append(f.bals, btStartBalancer(t, bin, name, join, "500ms"))
	}
	for i := range n {
		sim := btStartSim(t, bin, fmt.Sprintf("sim-%d", i), blocks, simArgs...)
		sc := scStartSidecar(t, bin, sim.url, sim.pub, sim.replay,
			append([]string{"--node-name", fmt.Sprintf("replica-%d", i), "--join", f.bals[0].gossip, "--model", "e2e-model"}, sidecarArgs...)...)
		f.sims = append(f.sims, sim)
		f.sidecars = append(f.sidecars, sc)
	}
	for _, b := range f.bals {
		scWait(t, "balancer sees every replica healthy", func() error { return b.replicasHealthy(n) })
	}
	return f
}

// replicasHealthy reports nil once the balancer's metrics show n healthy
// replicas.
func (b *btBalancer) replicasHealthy(n int) error {
	resp, err := http.Get(b.admin + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "inferrail_balancer_replica_state{") && strings.Contains(line, `state="healthy"`) && strings.HasSuffix(line, " 1") {
			got++
		}
	}
	if got != n {
		return fmt.Errorf("%d healthy replicas, want %d", got, n)
	}
	return nil
}

// btResult is what one completion returned.
type btResult struct {
	status    int
	replica   string
	predicted int
	cached    int
	prompt    int
	err       error
}

func btComplete(url, prompt string, maxTokens int) btResult {
	body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":%d,"ignore_eos":true}`, prompt, maxTokens)
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return btResult{err: err}
	}
	defer resp.Body.Close()
	r := btResult{status: resp.StatusCode, replica: resp.Header.Get("X-Inferrail-Replica")}
	r.predicted, _ = strconv.Atoi(resp.Header.Get("X-Inferrail-Cached-Tokens"))
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.err = err
		return r
	}
	var out struct {
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &out); err != nil {
			r.err = fmt.Errorf("decode %s: %w", b, err)
		}
		r.prompt = out.Usage.PromptTokens
		if d := out.Usage.PromptTokensDetails; d != nil {
			r.cached = d.CachedTokens
		}
	} else {
		r.err = fmt.Errorf("%s: %s", resp.Status, b)
	}
	return r
}

// btPrefix is a long shared prefix for group g (about 40 blocks).
func btPrefix(g int) string {
	return strings.Repeat(fmt.Sprintf("group %d shares this long document about topic %d. ", g, g*7+3), 40)
}

// TestBalancerE2E runs the real binary: simulators, sidecars and balancers
// on loopback.
func TestBalancerE2E(t *testing.T) {
	bin := scBuild(t)
	t.Run("Check", func(t *testing.T) { btCheck(t, bin) })
	t.Run("PrefixAffinityAccuracyAndWarmThroughB", func(t *testing.T) { btAffinity(t, bin) })
	t.Run("KillSimulatorMidTraffic", func(t *testing.T) { btKill(t, bin) })
	t.Run("ClientDisconnectFreesSlot", func(t *testing.T) { btDisconnect(t, bin) })
	t.Run("HungReplicaStopsAbsorbingTraffic", func(t *testing.T) { btHung(t, bin) })
}

// btAffinity: requests sharing a long prefix go to the replica holding it;
// predicted cached tokens equal the engine's on >= 98% of the requests after
// warm-up, under eviction pressure; a prefix first sent through balancer A is
// found warm through balancer B.
//
// The workload interleaves six hot groups (a ~44-block shared prefix each)
// with one-off cold prompts of ~30 blocks, at 25 requests/s: the cold prompts
// fill the 300-block caches and are evicted, LRU, while the hot prefixes stay.
func btAffinity(t *testing.T, bin string) {
	f := btStartFleet(t, bin, 3, 300, []string{"bal-a", "bal-b"}, "--zero-latency")
	a, b := f.bals[0], f.bals[1]
	const hot, n, warmup = 6, 160, 24
	home := map[int]string{}
	moved, repeats := 0, 0
	matched, measured, hotMatched, hotMeasured := 0, 0, 0, 0
	pace := time.NewTicker(40 * time.Millisecond) // offered load, not a synchronisation
	defer pace.Stop()
	for i := range n {
		<-pace.C
		g, cold := (i/2)%hot, i%2 == 1
		p := btPrefix(g) + fmt.Sprintf(" question %d?", i)
		if cold {
			p = strings.Repeat(fmt.Sprintf("one-off prompt %d with its own words. ", i), 14)
		}
		r := btComplete(a.url, p, 4)
		if r.err != nil || r.status != 200 {
			t.Fatalf("request %d: %v", i, r.err)
		}
		if !cold {
			if h, ok := home[g]; ok {
				repeats++
				if r.replica != h {
					moved++
				}
			}
			home[g] = r.replica
		}
		if i < warmup {
			continue
		}
		measured++
		if !cold {
			hotMeasured++
		}
		if r.predicted == r.cached {
			matched++
			if !cold {
				hotMatched++
			}
		} else {
			t.Logf("request %d (cold %v) on %s: predicted %d, engine cached %d of %d", i, cold, r.replica, r.predicted, r.cached, r.prompt)
		}
	}
	evicted := 0.0 // summary rebuilds caused by evictions
	for _, sc := range f.sidecars {
		evicted += scMetric(t, sc, "inferrail_sidecar_summary_rebuilds_total", `reason="threshold"`) +
			scMetric(t, sc, "inferrail_sidecar_summary_rebuilds_total", `reason="removals"`)
	}
	t.Logf("affinity: %d of %d repeat requests of a hot group moved; prediction exact on %d of %d requests (%d of %d hot); %v summary rebuilds after evictions",
		moved, repeats, matched, measured, hotMatched, hotMeasured, evicted)
	if evicted == 0 {
		t.Errorf("no summary was rebuilt after evictions: no eviction pressure")
	}
	// Fresh data and every request predicted.
	if n := btMetric(t, a, "inferrail_balancer_replica_data_stale", ""); n != 0 {
		t.Errorf("%v replicas' gossiped data stale during steady traffic", n)
	}
	if n := btMetric(t, a, "inferrail_balancer_unpredicted_total", ""); n != 0 {
		t.Errorf("%v requests routed without a prediction", n)
	}
	if moved*10 > repeats {
		t.Errorf("%d of %d requests of a group left its replica", moved, repeats)
	}
	if matched*100 < measured*98 {
		t.Errorf("predicted cached tokens equal the engine's on %d of %d requests, want >= 98%%", matched, measured)
	}

	// A prefix sent once through A is warm through B, on the same replica.
	p := strings.Repeat("a brand new prefix first seen by balancer A. ", 60)
	ra := btComplete(a.url, p+" first", 4)
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	var rb btResult
	scWait(t, "B to see A's prefix in the summaries", func() error {
		rb = btComplete(b.url, p+" second", 4)
		if rb.err != nil {
			return rb.err
		}
		if rb.replica != ra.replica || rb.cached == 0 || rb.predicted == 0 {
			return fmt.Errorf("through B: replica %s (A used %s), predicted %d, engine cached %d", rb.replica, ra.replica, rb.predicted, rb.cached)
		}
		return nil
	})
	t.Logf("through B: replica %s, predicted %d, engine cached %d of %d", rb.replica, rb.predicted, rb.cached, rb.prompt)
}

// btKill: killing a simulator mid-traffic fails no request that had not
// started (non-streaming requests get their first byte only when done).
func btKill(t *testing.T, bin string) {
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-k"})
	bal := f.bals[0]
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var failures []string
	ok, started := 0, 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				r := btComplete(bal.url, btPrefix(w%4)+fmt.Sprintf(" worker %d request %d", w, i), 32)
				mu.Lock()
				switch {
				case r.err == nil && r.status == 200:
					ok++
				case r.status == 200:
					started++ // its response had begun: allowed to break
				default:
					failures = append(failures, fmt.Sprintf("worker %d request %d: %v", w, i, r.err))
				}
				mu.Unlock()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return ok }
	scWait(t, "traffic", func() error {
		if count() < 50 {
			return fmt.Errorf("%d requests done", count())
		}
		return nil
	})
	f.sims[1].proc.kill(syscall.SIGKILL)
	before := count()
	scWait(t, "traffic after the kill", func() error {
		if count() < before+200 {
			return fmt.Errorf("%d requests done since the kill", count()-before)
		}
		return nil
	})
	cancel()
	wg.Wait()
	t.Logf("%d requests succeeded, %d broke after their response began, %d failed before it; the balancer retried %v attempts",
		ok, started, len(failures), btMetric(t, bal, "inferrail_balancer_retries_total", ""))
	if len(failures) > 0 {
		t.Errorf("requests failed after a simulator was killed: %v", failures)
	}
}

// btDisconnect: a client that disconnects mid-stream frees the engine's
// slot. The time it takes is logged (the issue asks for 100 ms; machines are
// too noisy to assert it here).
func btDisconnect(t *testing.T, bin string) {
	f := btStartFleet(t, bin, 1, 4000, []string{"bal-d"})
	bal, sim := f.bals[0], f.sims[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := btLongStream(t, ctx, bal)
	if n := btEngineInFlight(t, sim); n != 1 {
		t.Fatalf("engine in flight = %d, want 1", n)
	}
	start := time.Now()
	cancel()
	resp.Body.Close()
	scWait(t, "the engine slot to be freed", func() error {
		if n := btEngineInFlight(t, sim); n != 0 {
			return fmt.Errorf("engine in flight = %d", n)
		}
		return nil
	})
	t.Logf("engine slot freed %v after the client disconnected (polling every 20ms)", time.Since(start))
}

// btLongStream starts a stream of 20,000 tokens through b, which goes on
// until ctx ends, and returns its response once its first line has arrived
// with status 200.
func btLongStream(t *testing.T, ctx context.Context, b *btBalancer) *http.Response {
	t.Helper()
	body := `{"model":"e2e-model","prompt":"tell me a very long story","max_tokens":20000,"ignore_eos":true,"stream":true}`
	req, _ := http.NewRequestWithContext(ctx, "POST", b.url+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s, first line %q: %v", resp.Status, line, err)
	}
	return resp
}

func btEngineInFlight(t *testing.T, sim *scSim) int64 {
	t.Helper()
	var body struct {
		Ranks []struct {
			InFlight int64 `json:"in_flight"`
		} `json:"ranks"`
	}
	if err := scGetJSON(sim.url+"/inferrail/debug/load", &body); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range body.Ranks {
		n += r.InFlight
	}
	return n
}

// btHung: a replica that stops answering (hang fault) stops absorbing
// traffic, twice: balancer bal-h takes it out when its probes fail; bal-p,
// without probes, ejects it after two first-byte timeouts, moving those
// requests to other replicas, so that no request fails.
func btHung(t *testing.T, bin string) {
	f := btStartFleet(t, bin, 3, 4000, []string{"bal-h"}, "--zero-latency")
	bal := f.bals[0]
	passive := btStartBalancer(t, bin, "bal-p", []string{bal.gossip}, "0s")
	scWait(t, "bal-p sees every replica", func() error { return passive.replicasHealthy(3) })
	hung := f.sims[0]
	resp, err := http.Post(hung.url+"/inferrail/debug/faults", "application/json",
		strings.NewReader(`{"kind":"hang","duration":"10m"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("inject fault: %s", resp.Status)
	}
	// Different prefixes so that every replica is picked now and then.
	scWait(t, "bal-h to take the hung replica out", func() error {
		for i := range 12 {
			r := btComplete(bal.url, btPrefix(100+i)+" hung test", 4)
			if r.err != nil {
				return r.err
			}
		}
		return bal.replicasHealthy(2)
	})
	for i := range 30 {
		r := btComplete(bal.url, btPrefix(200+i)+" after", 4)
		if r.err != nil || r.replica == "replica-0" {
			t.Fatalf("bal-h request %d after the probes failed: replica %s, %v", i, r.replica, r.err)
		}
	}
	// Passive: every request succeeds (a timed-out attempt moves on) until
	// the hung replica is ejected.
	i := 0
	scWait(t, "bal-p to eject the hung replica", func() error {
		r := btComplete(passive.url, btPrefix(300+i)+" passive", 4)
		i++
		if r.err != nil {
			t.Fatalf("bal-p request %d: %v", i, r.err)
		}
		if n := btMetric(t, passive, "inferrail_balancer_ejections_total", `replica="replica-0"`); n == 0 {
			return fmt.Errorf("not ejected after %d requests", i)
		}
		return nil
	})
	for k := range 30 {
		r := btComplete(passive.url, btPrefix(400+k)+" after", 4)
		if r.err != nil || r.replica == "replica-0" {
			t.Fatalf("bal-p request %d after the ejection: replica %s, %v", k, r.replica, r.err)
		}
	}
	t.Logf("bal-p ejected the hung replica after %d requests, retrying %v attempts", i,
		btMetric(t, passive, "inferrail_balancer_retries_total", `reason="first_byte_timeout"`))
}

// btCheck: `inferrail check` accepts the shipped configs and reports every
// problem of a bad one, exiting 1.
func btCheck(t *testing.T, bin string) {
	root := scRepoRoot(t)
	for _, f := range []string{"deploy/local.yaml", "deploy/inferrail.example.yaml"} {
		out, err := exec.Command(bin, "check", "--config", filepath.Join(root, f)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), ": ok") {
			t.Errorf("check %s: %v\n%s", f, err, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("listen: nowhere\nretry:\n  max_attempts: 0\n  backof: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "check", "--config", bad).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("check of a bad config: %v\n%s", err, out)
	}
	for _, want := range []string{"retry.backof: unknown key", `listen must be host:port, got "nowhere"`, "retry.max_attempts must be in [1, 100], got 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// btMetric returns the sum of a balancer metric's samples whose labels
// contain labels.
func btMetric(t *testing.T, b *btBalancer, name, labels string) float64 {
	t.Helper()
	return scMetric(t, &scSidecar{admin: b.admin}, name, labels)
}
