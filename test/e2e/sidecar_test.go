// Package e2e holds tests that build and run the real inferrail binary.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inferrail/inferrail/internal/freeport"
)

// scGuard bounds every wait for a process or a convergence: a hang guard,
// never a timing assertion.
const scGuard = 60 * time.Second

// scBuild builds the inferrail binary once per test into its temp dir.
func scBuild(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "inferrail")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/inferrail")
	cmd.Dir = scRepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func scRepoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// scFreePort returns a port free on 127.0.0.1 for TCP and UDP right now, from
// below the ephemeral range (internal/freeport).
func scFreePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scProc is a started inferrail process whose output goes to a log file.
type scProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func scStart(t *testing.T, bin, name string, args ...string) *scProc {
	t.Helper()
	return scStartEnv(t, bin, name, nil, args...)
}

// scStartEnv is scStart with env added to the test's environment.
func scStartEnv(t *testing.T, bin, name string, env []string, args ...string) *scProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &scProc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill(syscall.SIGKILL)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- %s log ---\n%s", name, b)
		}
	})
	return p
}

// kill sends sig and waits for the process to exit.
func (p *scProc) kill(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	<-p.done
}

// scWait polls cond until it holds; the deadline is a hang guard.
func scWait(t *testing.T, what string, cond func() error) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(scGuard)
	var last error
	for {
		if last = cond(); last == nil {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("gave up waiting for %s: %v", what, last)
		}
	}
}

// scWaitOK waits until GET url answers 200 (a process started and serving).
func scWaitOK(t *testing.T, what, url string) {
	t.Helper()
	scWait(t, what, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
}

func scGetJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// scSim is a running `inferrail sim` with KV events and replay.
type scSim struct {
	bin                  string
	port, pub, replay    int
	proc                 *scProc
	url                  string
	kvEventsConfigString string
}

func scStartSim(t *testing.T, bin string, port, pub, replay int) *scSim {
	t.Helper()
	s := &scSim{bin: bin, port: port, pub: pub, replay: replay, url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	s.kvEventsConfigString = fmt.Sprintf(`{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:%d","replay_endpoint":"tcp://*:%d"}`, pub, replay)
	s.start(t)
	return s
}

func (s *scSim) start(t *testing.T) {
	t.Helper()
	s.proc = scStart(t, s.bin, "sim", "sim", "--host", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--served-model-name", "e2e-model", "--zero-latency", "--block-size", "16", "--num-gpu-blocks-override", "4000",
		"--kv-events-config", s.kvEventsConfigString)
	scWait(t, "sim health", func() error {
		resp, err := http.Get(s.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}

// cache returns the union of the sim's cached router hashes over its ranks.
func (s *scSim) cache() ([]uint64, error) {
	var body struct {
		Ranks []struct {
			Hashes []uint64 `json:"hashes"`
		} `json:"ranks"`
	}
	if err := scGetJSON(s.url+"/inferrail/debug/kv_cache", &body); err != nil {
		return nil, err
	}
	var all []uint64
	for _, r := range body.Ranks {
		all = append(all, r.Hashes...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// scSidecar is a running `inferrail sidecar`.
type scSidecar struct {
	proc        *scProc
	data, admin string
}

func scStartSidecar(t *testing.T, bin string, engine string, pub, replay int, extra ...string) *scSidecar {
	t.Helper()
	data, admin, gossip := scFreePort(t), scFreePort(t), scFreePort(t)
	s := &scSidecar{data: fmt.Sprintf("http://127.0.0.1:%d", data), admin: fmt.Sprintf("http://127.0.0.1:%d", admin)}
	args := []string{"sidecar",
		"--engine-url", engine, "--engine", "vllm", "--tokenizer", "builtin:sim",
		"--listen", fmt.Sprintf("127.0.0.1:%d", data), "--admin", fmt.Sprintf("127.0.0.1:%d", admin),
		"--gossip-bind", fmt.Sprintf("127.0.0.1:%d", gossip), "--gossip-profile", "local", "--node-name", "e2e-sidecar",
		"--kv-events-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", pub),
		"--kv-events-replay-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", replay),
		"--log-level", "debug"}
	s.proc = scStart(t, bin, "sidecar", append(args, extra...)...)
	scWait(t, "sidecar health", func() error {
		resp, err := http.Get(s.admin + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return s
}

type scBlocks struct {
	Source string              `json:"source"`
	Blocks map[string][]uint64 `json:"blocks"`
}

type scSummary struct {
	Built    bool           `json:"built"`
	Source   string         `json:"source"`
	Complete bool           `json:"complete"`
	Epoch    uint64         `json:"epoch"`
	Blocks   map[string]int `json:"blocks"`
}

// converged reports nil once the sidecar's exact GPU set equals the sim's
// cache, and the summary is exact and complete over it.
func scConverged(sim *scSim, sc *scSidecar) error {
	want, err := sim.cache()
	if err != nil {
		return err
	}
	var got scBlocks
	if err := scGetJSON(sc.admin+"/debug/blocks", &got); err != nil {
		return err
	}
	if got.Source != "exact" {
		return fmt.Errorf("sidecar block set source %q, want exact", got.Source)
	}
	gpu := got.Blocks["GPU"]
	slices.Sort(gpu)
	if !slices.Equal(want, gpu) {
		return fmt.Errorf("sidecar holds %d blocks, the sim %d (equal: false)", len(gpu), len(want))
	}
	var sum scSummary
	if err := scGetJSON(sc.admin+"/v1/summary", &sum); err != nil {
		return err
	}
	if !sum.Built || sum.Source != "exact" || !sum.Complete || sum.Blocks["gpu"] != len(want) {
		return fmt.Errorf("summary %+v, want a complete exact summary of %d blocks", sum, len(want))
	}
	return nil
}

// scTraffic sends n completions with shared prefixes through the sidecar.
func scTraffic(t *testing.T, sc *scSidecar, tag string, n int) {
	t.Helper()
	shared := strings.Repeat("a shared system prompt that many requests start with. ", 4)
	for i := range n {
		body := fmt.Sprintf(`{"model":"e2e-model","prompt":%q,"max_tokens":24,"ignore_eos":true}`,
			fmt.Sprintf("%s[%s %d] then something unique to this request number %d.", shared, tag, i%3, i))
		resp, err := http.Post(sc.data+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s %s", i, resp.Status, b)
		}
	}
}

// scMetricPage returns the Prometheus text page at base + "/metrics" (an
// admin address, or a simulator's URL).
func scMetricPage(base string) ([]byte, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// scMetric returns the sum of a metric's samples whose line matches labels.
func scMetric(t *testing.T, sc *scSidecar, name, labels string) float64 {
	t.Helper()
	b, err := scMetricPage(sc.admin)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	sum := 0.0
	for _, m := range re.FindAllSubmatch(b, -1) {
		if labels != "" && !bytes.Contains(m[1], []byte(labels)) {
			continue
		}
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		sum += v
	}
	return sum
}

// TestSidecarFollowsSimulator runs `inferrail sim` and `inferrail sidecar` on
// loopback: after traffic the sidecar's block set equals the simulator's
// cache; a kill -9 and restart of the simulator is detected and the set
// converges to the new (empty-started) cache.
func TestSidecarFollowsSimulator(t *testing.T) {
	bin := scBuild(t)
	sim := scStartSim(t, bin, scFreePort(t), scFreePort(t), scFreePort(t))
	sc := scStartSidecar(t, bin, sim.url, sim.pub, sim.replay)

	scTraffic(t, sc, "first", 12)
	scWait(t, "the sidecar's set to equal the sim's cache", func() error { return scConverged(sim, sc) })
	before, _ := sim.cache()
	if len(before) == 0 {
		t.Fatal("the sim caches nothing after traffic")
	}

	reconnects := scMetric(t, sc, "inferrail_sidecar_kvevents_reconnects_total", "")
	sim.proc.kill(syscall.SIGKILL)
	sim.start(t)
	// Batches published before the sidecar's SUB is connected again are
	// lost to it (PUB/SUB), and it can only notice the restart on a later
	// batch; so wait for the reconnect, then keep traffic flowing as a real
	// fleet would until the sets agree.
	scWait(t, "the event connection to the new sim", func() error {
		if scMetric(t, sc, "inferrail_sidecar_kvevents_reconnects_total", "") <= reconnects ||
			scMetric(t, sc, "inferrail_sidecar_kvevents_connected", "") < 1 {
			return errors.New("not reconnected")
		}
		return nil
	})
	scTraffic(t, sc, "second", 6)
	polls := 0
	scWait(t, "convergence after the sim's restart", func() error {
		if polls++; polls%10 == 0 {
			scTraffic(t, sc, "trickle", 1)
		}
		return scConverged(sim, sc)
	})
	// The restarted sim started empty: blocks only the first run cached must
	// be gone from the sidecar too (scConverged compared the sets).
	after, _ := sim.cache()
	gone := 0
	for _, h := range before {
		if !slices.Contains(after, h) {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("no block of the first run disappeared after the restart: the test proves nothing")
	}
	if got := scMetric(t, sc, "inferrail_sidecar_kvevents_publisher_restarts_total", ""); got < 1 {
		t.Errorf("publisher restarts = %v, want >= 1", got)
	}

	// SIGTERM: the sidecar leaves the gossip, drains and exits 0.
	sc.proc.kill(syscall.SIGTERM)
	if sc.proc.err != nil {
		t.Errorf("sidecar exit after SIGTERM: %v", sc.proc.err)
	}
}

// scForwarder is a TCP forwarder whose connections the test can cut, to
// drop the sidecar's KV-event connection while the engine keeps publishing.
type scForwarder struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	paused bool
}

func scStartForwarder(t *testing.T, target string) *scForwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &scForwarder{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); f.cut(false) })
	go f.serve()
	return f
}

func (f *scForwarder) port() int { return f.ln.Addr().(*net.TCPAddr).Port }

func (f *scForwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		paused := f.paused
		f.mu.Unlock()
		if paused {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, up)
		f.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

// cut closes every forwarded connection; with pause, new ones are refused
// until resume.
func (f *scForwarder) cut(pause bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = pause
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

func (f *scForwarder) resume() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = false
}

// TestSidecarReplaysDroppedEventConnection cuts the sidecar's KV-event
// connection while traffic goes on: the batches published meanwhile are
// recovered through the replay socket, with no gap left (the summary stays
// complete and the set equals the sim's cache).
func TestSidecarReplaysDroppedEventConnection(t *testing.T) {
	bin := scBuild(t)
	sim := scStartSim(t, bin, scFreePort(t), scFreePort(t), scFreePort(t))
	fwd := scStartForwarder(t, fmt.Sprintf("127.0.0.1:%d", sim.pub))
	sc := scStartSidecar(t, bin, sim.url, fwd.port(), sim.replay)

	scTraffic(t, sc, "before", 6)
	scWait(t, "convergence before the cut", func() error { return scConverged(sim, sc) })
	replaysBefore := scMetric(t, sc, "inferrail_sidecar_kvevents_replays_total", `result="ok"`)

	fwd.cut(true)
	scTraffic(t, sc, "during", 6) // published while the sidecar cannot hear
	fwd.resume()
	scWait(t, "the event connection to come back", func() error {
		if scMetric(t, sc, "inferrail_sidecar_kvevents_connected", "") < 1 {
			return errors.New("not connected")
		}
		return nil
	})
	scTraffic(t, sc, "after", 3) // a batch after the cut reveals the gap
	scWait(t, "convergence after the replay", func() error { return scConverged(sim, sc) })

	if got := scMetric(t, sc, "inferrail_sidecar_kvevents_replays_total", `result="ok"`); got <= replaysBefore {
		t.Errorf("replays ok = %v (before the cut %v), want one more", got, replaysBefore)
	}
	if got := scMetric(t, sc, "inferrail_sidecar_blockset_incomplete", ""); got != 0 {
		t.Errorf("block set incomplete = %v, want 0 (no gap left)", got)
	}
	if got := scMetric(t, sc, "inferrail_sidecar_kvevents_lost_total", ""); got != 0 {
		t.Errorf("unrecovered gaps = %v, want 0", got)
	}
}

// TestSidecarSilentEngine runs the sim without KV events: the sidecar says
// so after its grace period and keeps an approximate block set from the
// prompts of its data path, every block of which the sim really holds.
func TestSidecarSilentEngine(t *testing.T) {
	bin := scBuild(t)
	port := scFreePort(t)
	scStart(t, bin, "sim", "sim", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--served-model-name", "e2e-model", "--zero-latency", "--block-size", "16")
	sim := &scSim{url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	scWait(t, "sim health", func() error {
		resp, err := http.Get(sim.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	// The events endpoint points at a port where nobody publishes.
	sc := scStartSidecar(t, bin, sim.url, scFreePort(t), scFreePort(t), "--kv-events-silent-grace", "300ms")
	scTraffic(t, sc, "silent", 8)
	polls := 0
	scWait(t, "the silent verdict", func() error {
		if polls++; polls%10 == 0 {
			scTraffic(t, sc, "trickle", 1)
		}
		if scMetric(t, sc, "inferrail_sidecar_events_mode", `mode="silent"`) != 1 {
			return errors.New("not silent yet")
		}
		return nil
	})
	var got scBlocks
	if err := scGetJSON(sc.admin+"/debug/blocks", &got); err != nil {
		t.Fatal(err)
	}
	cache, err := sim.cache()
	if err != nil {
		t.Fatal(err)
	}
	approx := got.Blocks["GPU"]
	if got.Source != "approx" || len(approx) == 0 {
		t.Fatalf("block set %q with %d blocks, want a non-empty approximate set", got.Source, len(approx))
	}
	for _, h := range approx {
		if !slices.Contains(cache, h) {
			t.Errorf("approximate block %d is not in the sim's cache", h)
		}
	}
	var sum scSummary
	if err := scGetJSON(sc.admin+"/v1/summary", &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Source != "approx" || sum.Complete || sum.Blocks["gpu"] != len(approx) {
		t.Errorf("summary %+v, want an incomplete approximate summary of %d blocks", sum, len(approx))
	}
}
