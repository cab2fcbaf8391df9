//go:build stress

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The fault suite (`make stress`): each test is one row of
// docs/reliability.md's table. It runs the real binaries on loopback, measures
// its figures and appends them as one JSON line to the results file
// ($INFERRAIL_STRESS_RESULTS, default bin/stress-results.jsonl), from which
// `go run ./scripts/reliability` renders the table.

// stRow is one measured row of the table.
type stRow struct {
	Row     string         `json:"row"`     // stable id, the table's order
	Fault   string         `json:"fault"`   // what was done
	Result  string         `json:"result"`  // what was measured, in words
	Figures map[string]any `json:"figures"` // the numbers behind Result
	At      time.Time      `json:"at"`
	Passed  bool           `json:"passed"`
}

// stRecord appends the row to the results file when the test ends (so that
// Passed says whether its assertions held).
func stRecord(t *testing.T, row stRow) {
	t.Helper()
	t.Cleanup(func() {
		row.At = time.Now().UTC()
		row.Passed = !t.Failed()
		path := os.Getenv("INFERRAIL_STRESS_RESULTS")
		if path == "" {
			path = filepath.Join(scRepoRoot(t), "bin", "stress-results.jsonl")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Error(err)
			return
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		b, _ := json.Marshal(row)
		_, _ = f.Write(append(b, '\n'))
		t.Logf("row %s: %s %v", row.Row, row.Result, row.Figures)
	})
}

// stSince polls cond like scWait and returns how long it took to hold.
func stSince(t *testing.T, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	scWait(t, what, cond)
	return time.Since(start)
}

// ms rounds d to milliseconds for the results.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// stReplicaState returns the replica's state on the balancer's metrics page
// ("" when the balancer does not list it).
func stReplicaState(b *btBalancer, replica string) (string, error) {
	resp, err := http.Get(b.admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	prefix := `inferrail_balancer_replica_state{replica="` + replica + `",state="`
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) && strings.HasSuffix(line, " 1") {
			return strings.TrimSuffix(line[len(prefix):], `"} 1`), nil
		}
	}
	return "", sc.Err()
}

// stOut waits until the balancer no longer routes to replica (its state is
// not healthy, or it is gone from the view).
func stOut(t *testing.T, b *btBalancer, replica string) time.Duration {
	t.Helper()
	return stSince(t, replica+" out of "+b.proc.name, func() error {
		st, err := stReplicaState(b, replica)
		if err != nil {
			return err
		}
		if st == "healthy" {
			return errors.New("still healthy")
		}
		return nil
	})
}

// stRSS returns the process's resident set in bytes (Linux /proc).
func stRSS(t *testing.T, p *scProc) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", p.cmd.Process.Pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// stFault injects a fault into a simulator.
func stFault(t *testing.T, sim *scSim, spec string) {
	t.Helper()
	resp, err := http.Post(sim.url+"/inferrail/debug/faults", "application/json", strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("inject %s: %s %s", spec, resp.Status, b)
	}
}

// stRestart starts a killed process again with its arguments, output
// appended to a new log.
func stRestart(t *testing.T, p *scProc) *scProc {
	t.Helper()
	select {
	case <-p.done:
	default:
		t.Fatalf("%s is still running", p.name)
	}
	return scStart(t, p.cmd.Path, p.name+"-again", p.cmd.Args[1:]...)
}

// stWaitHealthy waits for url's /health to answer 200.
func stWaitHealthy(t *testing.T, what, url string) {
	t.Helper()
	scWait(t, what, func() error {
		resp, err := http.Get(url + "/health")
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

// stReq is one request the load sends.
type stReq struct {
	stream    bool
	prompt    string
	maxTokens int
}

// stOutcome is what one request got.
type stOutcome struct {
	start, end time.Time
	status     int
	replica    string
	begun      bool  // a 200 had come back (for a stream: its headers)
	failovers  int   // connect errors the client moved past to another balancer
	err        error // nil: the whole, well-formed answer arrived
}

// stLoad sends requests from workers, paced to a target rate, to a list of
// balancers: like a cloud load balancer, a request whose connection is
// refused goes to the next balancer.
type stLoad struct {
	urls   []string
	client *http.Client
	// retryReset marks requests as replayable (Idempotency-Key), so that the
	// client's transport sends again a request whose reused connection was
	// closed or reset before any answer byte, as a load balancer retrying
	// resets before the response (Envoy's retry_on: reset) does.
	retryReset bool
	gen        func(i int) stReq
	stopped    atomic.Bool
	wg         sync.WaitGroup
	started    time.Time
	n          atomic.Int64

	mu  sync.Mutex
	out []stOutcome
}

// stStartLoad starts workers sending gen(i) at about rate requests per
// second in all (0: as fast as they can).
func stStartLoad(t *testing.T, urls []string, workers int, rate float64, gen func(i int) stReq) *stLoad {
	t.Helper()
	return stStartLoadOpts(t, urls, workers, rate, false, gen)
}

// stStartLoadOpts is stStartLoad with retryReset (see stLoad).
func stStartLoadOpts(t *testing.T, urls []string, workers int, rate float64, retryReset bool, gen func(i int) stReq) *stLoad {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: 0, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
	l := &stLoad{urls: urls, client: &http.Client{Transport: tr, Timeout: 2 * scGuard}, gen: gen, started: time.Now(), retryReset: retryReset}
	var period time.Duration
	if rate > 0 {
		period = time.Duration(float64(workers) / rate * float64(time.Second))
	}
	for w := range workers {
		l.wg.Go(func() {
			next := time.Now().Add(time.Duration(w) * period / time.Duration(workers))
			for !l.stopped.Load() {
				if period > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d) // pacing the load, not synchronisation
					}
					next = next.Add(period)
				}
				i := int(l.n.Add(1) - 1)
				o := l.do(i, gen(i))
				l.mu.Lock()
				l.out = append(l.out, o)
				l.mu.Unlock()
			}
		})
	}
	t.Cleanup(l.stop)
	return l
}

// stop ends the load once the requests in flight are answered.
func (l *stLoad) stop() {
	l.stopped.Store(true)
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

// done returns the outcomes so far.
func (l *stLoad) done() []stOutcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]stOutcome(nil), l.out...)
}

// waitDone waits until n more requests than now have been answered.
func (l *stLoad) waitDone(t *testing.T, n int) {
	t.Helper()
	base := len(l.done())
	scWait(t, fmt.Sprintf("%d more requests", n), func() error {
		if got := len(l.done()) - base; got < n {
			return fmt.Errorf("%d answered", got)
		}
		return nil
	})
}

func (l *stLoad) do(i int, r stReq) stOutcome {
	var o stOutcome
	for k := range len(l.urls) {
		o = stCall(l.client, l.urls[(i+k)%len(l.urls)], r, l.retryReset)
		o.failovers = k
		var op *net.OpError
		if o.err == nil || o.begun || !errors.As(o.err, &op) || op.Op != "dial" {
			break
		}
	}
	return o
}

// stCall sends one request and reads its answer to the end, checking that
// it is complete: a JSON body with choices, or a stream ending in [DONE].
func stCall(c *http.Client, url string, r stReq, replayable bool) (o stOutcome) {
	o.start = time.Now()
	defer func() { o.end = time.Now() }()
	body, _ := json.Marshal(map[string]any{"model": "e2e-model", "prompt": r.prompt, "max_tokens": r.maxTokens,
		"ignore_eos": true, "stream": r.stream})
	req, err := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader(string(body)))
	if err != nil {
		o.err = err
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	if replayable {
		req.Header.Set("Idempotency-Key", strconv.FormatInt(o.start.UnixNano(), 36))
	}
	resp, err := c.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	o.status, o.replica = resp.StatusCode, resp.Header.Get("X-Inferrail-Replica")
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		o.err = fmt.Errorf("%s: %s", resp.Status, b)
		return o
	}
	o.begun = true
	if !r.stream {
		var v struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Choices) == 0 {
			o.err = fmt.Errorf("answer not a completion: %v", err)
		}
		return o
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			return o
		}
	}
	o.err = fmt.Errorf("stream ended before [DONE]: %v", sc.Err())
	return o
}

// stTally counts outcomes.
type stTally struct {
	ok, lostBeforeBegin, brokeAfterBegin, failovers int
	first, last                                     time.Time
	byReplica                                       map[string]int
	errs                                            []string
}

func stCount(outs []stOutcome, keep func(o stOutcome) bool) stTally {
	s := stTally{byReplica: map[string]int{}}
	for _, o := range outs {
		if keep != nil && !keep(o) {
			continue
		}
		if s.first.IsZero() || o.start.Before(s.first) {
			s.first = o.start
		}
		if o.end.After(s.last) {
			s.last = o.end
		}
		s.failovers += o.failovers
		switch {
		case o.err == nil:
			s.ok++
			s.byReplica[o.replica]++
		case o.begun:
			s.brokeAfterBegin++
		default:
			s.lostBeforeBegin++
			if len(s.errs) < 5 {
				s.errs = append(s.errs, o.err.Error())
			}
		}
	}
	return s
}

// rate is the tally's completed requests per second.
func (s stTally) rate() float64 {
	if d := s.last.Sub(s.first).Seconds(); d > 0 {
		return float64(s.ok+s.lostBeforeBegin+s.brokeAfterBegin) / d
	}
	return 0
}

// stMix is the default request mix: one in four streams, a few output
// tokens, prompts over 24 shared prefixes of about five blocks (so that
// cache affinity spreads them over the replicas) and a unique tail.
func stMix(tag string) func(i int) stReq {
	return func(i int) stReq {
		g := i % 24
		return stReq{stream: i%4 == 0, maxTokens: 8,
			prompt: strings.Repeat(fmt.Sprintf("group %d shares this document about topic %d. ", g, 7*g+3), 8) +
				fmt.Sprintf("%s request %d", tag, i)}
	}
}

// stSignal sends sig to p and waits for it to exit.
func stSignal(p *scProc, sig syscall.Signal) { p.kill(sig) }

// stCtx is a context bounded by the hang guard.
func stCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*scGuard)
	t.Cleanup(cancel)
	return ctx
}
