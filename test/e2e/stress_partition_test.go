//go:build stress

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stNet is a bridge in the root network namespace (10.77.0.1/24) with a
// network namespace per extra host on it (10.77.0.2, .3, ...), created by the
// test with iproute2 and removed when it ends. Needs root.
type stNet struct {
	t      *testing.T
	bridge string
	ns     []string
}

func stRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// stNewNet creates the bridge and n namespaces.
func stNewNet(t *testing.T, n int) *stNet {
	t.Helper()
	id := strconv.Itoa(os.Getpid() % 100000)
	nt := &stNet{t: t, bridge: "stbr" + id}
	t.Cleanup(func() {
		for _, ns := range nt.ns {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
		_ = exec.Command("ip", "link", "del", nt.bridge).Run()
	})
	stRun(t, "ip", "link", "add", nt.bridge, "type", "bridge")
	stRun(t, "ip", "addr", "add", "10.77.0.1/24", "dev", nt.bridge)
	stRun(t, "ip", "link", "set", nt.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("st%s-%d", id, i)
		host, peer := fmt.Sprintf("st%sh%d", id, i), fmt.Sprintf("st%sp%d", id, i)
		stRun(t, "ip", "netns", "add", ns)
		nt.ns = append(nt.ns, ns)
		stRun(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns)
		stRun(t, "ip", "link", "set", host, "master", nt.bridge, "up")
		stRun(t, "ip", "netns", "exec", ns, "ip", "addr", "add", nt.addr(i+1)+"/24", "dev", peer)
		stRun(t, "ip", "netns", "exec", ns, "ip", "link", "set", peer, "up")
		stRun(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	}
	return nt
}

// addr is host k's address: 0 is the root namespace, k > 0 namespace k-1.
func (nt *stNet) addr(k int) string { return fmt.Sprintf("10.77.0.%d", k+1) }

// start runs bin in host k's namespace (k = 0: the root one).
func (nt *stNet) start(k int, bin, name string, args ...string) *scProc {
	if k == 0 {
		return scStart(nt.t, bin, name, args...)
	}
	return scStart(nt.t, "ip", name, append([]string{"netns", "exec", nt.ns[k-1], bin}, args...)...)
}

// cut drops every packet between host k's namespace and peer's address, in
// both directions (nftables inside the namespace); heal removes the rule.
func (nt *stNet) cut(k int, peer string) {
	ns := nt.ns[k-1]
	rules := fmt.Sprintf(`table inet stpart {
	chain in { type filter hook input priority 0; policy accept; ip saddr %s drop; }
	chain out { type filter hook output priority 0; policy accept; ip daddr %s drop; }
}
`, peer, peer)
	path := filepath.Join(nt.t.TempDir(), "partition.nft")
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		nt.t.Fatal(err)
	}
	stRun(nt.t, "ip", "netns", "exec", ns, "nft", "-f", path)
}

func (nt *stNet) heal(k int) {
	stRun(nt.t, "ip", "netns", "exec", nt.ns[k-1], "nft", "delete", "table", "inet", "stpart")
}

// TestStressPartition: balancer A (its own namespace) loses every packet to
// and from the namespace of half the sidecars, while balancer B and the
// other sidecars reach everyone. A's view of the cut replicas goes stale at
// its max age and A stops routing to them; no request is lost; after the
// partition heals A's view converges again.
func TestStressPartition(t *testing.T) {
	bin := scBuild(t)
	nt := stNewNet(t, 2) // host 1: balancer A; host 2: sidecars 2 and 3
	root := nt.addr(0)
	startBal := func(k int, name string, join []string) *btBalancer {
		h := nt.addr(k)
		l, a, g := scFreePort(t), scFreePort(t), scFreePort(t)
		b := &btBalancer{url: fmt.Sprintf("http://%s:%d", h, l), admin: fmt.Sprintf("http://%s:%d", h, a), gossip: fmt.Sprintf("%s:%d", h, g)}
		path := filepath.Join(t.TempDir(), name+".yaml")
		cfg := btConfig(fmt.Sprintf("%s:%d", h, l), fmt.Sprintf("%s:%d", h, a), b.gossip, join, "500ms")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		b.proc = nt.start(k, bin, name, "balancer", "--config", path, "--node-name", name)
		scWait(t, name+" admin", func() error {
			resp, err := http.Get(b.admin + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			return err
		})
		return b
	}
	balB := startBal(0, "bal-b", nil)
	balA := startBal(1, "bal-a", []string{balB.gossip})
	for i := range 4 {
		sim := &scSim{bin: bin, port: scFreePort(t), pub: scFreePort(t), replay: scFreePort(t)}
		sim.url = fmt.Sprintf("http://%s:%d", root, sim.port)
		sim.proc = scStart(t, bin, fmt.Sprintf("sim-%d", i), "sim", "--host", root, "--port", strconv.Itoa(sim.port),
			"--served-model-name", "e2e-model", "--zero-latency", "--block-size", "16", "--num-gpu-blocks-override", "4000",
			"--kv-events-config", fmt.Sprintf(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:%d","replay_endpoint":"tcp://*:%d"}`, sim.pub, sim.replay))
		stWaitHealthy(t, "sim", sim.url)
		k := 0
		if i >= 2 {
			k = 2
		}
		h := nt.addr(k)
		data, admin, gossip := scFreePort(t), scFreePort(t), scFreePort(t)
		nt.start(k, bin, fmt.Sprintf("sidecar-%d", i), "sidecar",
			"--engine-url", sim.url, "--engine", "vllm", "--tokenizer", "builtin:sim", "--model", "e2e-model",
			"--listen", fmt.Sprintf("%s:%d", h, data), "--admin", fmt.Sprintf("%s:%d", h, admin),
			"--gossip-bind", fmt.Sprintf("%s:%d", h, gossip), "--gossip-profile", "local", "--join", balB.gossip,
			"--node-name", fmt.Sprintf("replica-%d", i),
			"--kv-events-endpoint", fmt.Sprintf("tcp://%s:%d", root, sim.pub),
			"--kv-events-replay-endpoint", fmt.Sprintf("tcp://%s:%d", root, sim.replay))
	}
	for _, b := range []*btBalancer{balA, balB} {
		scWait(t, b.proc.name+" sees four healthy replicas", func() error { return b.replicasHealthy(4) })
	}
	stale := func(replica, data string) bool {
		return btMetric(t, balA, "inferrail_balancer_replica_data_stale", fmt.Sprintf(`data="%s",replica="%s"`, data, replica)) == 1
	}
	load := stStartLoad(t, []string{balA.url, balB.url}, 32, 300, stMix("partition"))
	load.waitDone(t, 1000)

	cutAt := time.Now()
	nt.cut(1, nt.addr(2))
	// One poll records when each condition first held.
	var loadStale, sumStale, out time.Duration
	scWait(t, "A's view of the cut replicas to go stale and A to stop routing to them", func() error {
		now := time.Since(cutAt)
		if loadStale == 0 && stale("replica-2", "load") && stale("replica-3", "load") {
			loadStale = now
		}
		if sumStale == 0 && stale("replica-2", "summary") && stale("replica-3", "summary") {
			sumStale = now
		}
		if out == 0 {
			s2, err2 := stReplicaState(balA, "replica-2")
			s3, err3 := stReplicaState(balA, "replica-3")
			if err2 == nil && err3 == nil && s2 != "healthy" && s3 != "healthy" {
				out = now
			}
		}
		if loadStale == 0 || sumStale == 0 || out == 0 {
			return fmt.Errorf("load stale after %v, summary after %v, out after %v", loadStale, sumStale, out)
		}
		return nil
	})
	load.waitDone(t, 1500)
	bHealthy := balB.replicasHealthy(4) == nil

	nt.heal(1)
	converge := stSince(t, "A's view to converge after healing", func() error {
		if err := balA.replicasHealthy(4); err != nil {
			return err
		}
		for _, r := range []string{"replica-2", "replica-3"} {
			if stale(r, "load") || stale(r, "summary") {
				return fmt.Errorf("%s still stale", r)
			}
		}
		return nil
	})
	load.waitDone(t, 1000)
	load.stop()
	during := stCount(load.done(), func(o stOutcome) bool { return o.end.After(cutAt) })
	n := during.ok + during.lostBeforeBegin + during.brokeAfterBegin
	stRecord(t, stRow{Row: "07-partition", Fault: "partition (nftables in a network namespace) between 1 of 2 balancers and half of 4 sidecars, healed later",
		Result: fmt.Sprintf("%d of %d requests lost; the cut replicas' load went stale after %d ms (max age 1 s), their summaries after %d ms (max age 2 s); not routed to after %d ms (probes every 500 ms); the other balancer kept all 4 (%v); converged %d ms after healing",
			during.lostBeforeBegin+during.brokeAfterBegin, n, ms(loadStale), ms(sumStale), ms(out), bHealthy, ms(converge)),
		Figures: map[string]any{"requests": n, "lost": during.lostBeforeBegin + during.brokeAfterBegin, "load_stale_ms": ms(loadStale),
			"summary_stale_ms": ms(sumStale), "out_ms": ms(out), "other_balancer_all_healthy": bHealthy,
			"converge_ms": ms(converge)}})
	if m := during.lostBeforeBegin + during.brokeAfterBegin; m > 0 {
		t.Errorf("%d requests lost during the partition: %v", m, during.errs)
	}
	if !bHealthy {
		t.Error("the balancer outside the partition lost replicas")
	}
}
