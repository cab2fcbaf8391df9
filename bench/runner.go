package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize"
	"github.com/inferrail/inferrail/internal/wallclock"
)

// Runner drives one target open-loop. A Runner is used for one run at a time.
type Runner struct {
	cfg  Config
	log  *slog.Logger
	http *http.Client
	tok  *tokenize.Model
	seed kvblock.Hash
}

// NewRunner returns a runner for cfg. hc may be nil for a client without
// connection limits (an open-loop run must never queue in the client).
func NewRunner(cfg Config, log *slog.Logger, hc *http.Client) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 1024
		tr.MaxConnsPerHost = 0
		tr.DisableCompression = true
		hc = &http.Client{Transport: tr}
	}
	tok, err := tokenize.Load(tokenize.SimSpec, tokenize.Options{CacheBytes: -1})
	if err != nil {
		return nil, fmt.Errorf("load builtin:sim tokenizer: %w", err)
	}
	return &Runner{cfg: cfg, log: log, http: hc, tok: tok, seed: kvblock.NewSeed(cfg.Model, "", "")}, nil
}

// Run sends the sessions and returns the measurements. It returns when every
// session has finished, or Drain after the last arrival (cancelling what is
// left), or when ctx is cancelled (with ctx's error and what was measured).
func (r *Runner) Run(ctx context.Context, sessions []Session) (*Result, error) {
	if len(sessions) == 0 {
		return nil, errors.New("no sessions to run")
	}
	// The engines' counters are read when the warm-up ends, so their hit
	// rate covers about the same requests as the summary.
	type counters struct {
		c   CacheCounters
		err error
	}
	beforeCh := make(chan counters, 1)
	var before CacheCounters
	var berr error
	if r.cfg.Warmup == 0 {
		before, berr = scrapeCounters(ctx, r.http, r.cfg.EngineMetrics)
		beforeCh <- counters{before, berr}
	}
	start := time.Now()
	clients := make([]*client, len(r.cfg.Targets))
	for i, t := range r.cfg.Targets {
		clients[i] = &client{http: r.http, url: strings.TrimSuffix(t, "/") + "/v1/chat/completions",
			now: func() time.Duration { return time.Since(start) }, retries: r.cfg.Retries}
	}
	c := clients[0]

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.cfg.Warmup > 0 {
		go func() {
			waitUntil(runCtx, c.now, r.cfg.Warmup)
			b, err := scrapeCounters(context.WithoutCancel(ctx), r.http, r.cfg.EngineMetrics)
			beforeCh <- counters{b, err}
		}()
	}
	var (
		mu      sync.Mutex // protects records and prompts
		records []Record
		prompts []Prompt
		wg      sync.WaitGroup
	)
	add := func(rec Record, p Prompt) {
		mu.Lock()
		records = append(records, rec)
		if p.Tokens > 0 {
			prompts = append(prompts, p)
		}
		mu.Unlock()
	}
	// turnCtx ends halfway through the drain: no turn starts after it, while
	// requests already sent go on under runCtx.
	turnCtx, stopTurns := context.WithCancel(runCtx)
	defer stopTurns()
	run := runNonce() // request ids unique to this run
	for _, s := range sessions {
		wg.Go(func() { r.session(turnCtx, runCtx, clients, run, s, add) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last := sessions[len(sessions)-1].Start
	drain := time.NewTimer(max(0, last+r.cfg.Drain/2-c.now()))
	defer drain.Stop()
	select {
	case <-done:
	case <-drain.C:
		// A request in flight is the target's to answer, not the harness's
		// to cut: halfway through the drain sessions start no more turns,
		// and what was sent has the other half to finish before it is
		// cancelled: counted as failed without a first token, as cut with
		// one (Record.Cut). (With turns until the end, W2's
		// sessions lost 1 to 4 requests a run whatever the policy: turns
		// sent just before the deadline, cut while they streamed.)
		stopTurns()
		grace := time.NewTimer(max(0, last+r.cfg.Drain-c.now()))
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
			r.log.Warn("drain deadline reached; cancelling unfinished requests")
			cancel()
			<-done
		case <-ctx.Done():
			<-done
		}
	case <-ctx.Done():
		<-done
	}
	elapsed := c.now()
	cancel() // a run shorter than its warm-up reads the counters now
	bc := <-beforeCh
	before, berr = bc.c, bc.err
	if berr != nil {
		r.log.Warn("engine counters unavailable", "err", berr)
	}
	after, aerr := scrapeCounters(context.WithoutCancel(ctx), r.http, r.cfg.EngineMetrics)
	if times, err := fetchEngineTimes(context.WithoutCancel(ctx), r.http, r.cfg.EngineMetrics); err != nil {
		r.log.Debug("engine timings unavailable", "err", err)
	} else {
		// By the wall clock: start's monotonic reading has no counterpart
		// in another process's time (wallclock: not start's own wall
		// reading, which a descheduled clock read leaves early).
		startWall := wallclock.Of(start)
		for i := range records {
			t := times[records[i].RequestID]
			records[i].EngineTTFT = t.TTFT
			records[i].EngineQueue, records[i].EnginePreemptions = t.Queue, t.Preemptions
			if !t.Arrival.IsZero() {
				records[i].EngineArrival = t.Arrival.Sub(startWall)
			}
		}
	}
	slices.SortFunc(records, func(a, b Record) int { return int(a.Scheduled - b.Scheduled) })
	slices.SortStableFunc(prompts, func(a, b Prompt) int { return int(a.At - b.At) })
	res := &Result{Config: r.cfg, Records: records, Elapsed: elapsed}
	if berr == nil && aerr == nil && len(r.cfg.EngineMetrics) > 0 {
		d := after.Sub(before)
		res.EngineCounters = &d
	}
	res.Summary = Summarize(records, r.cfg.SLO)
	if res.EngineCounters != nil && res.EngineCounters.Queries > 0 {
		res.Summary.HitRateEngine = res.EngineCounters.Hits / res.EngineCounters.Queries
	}
	res.prompts = prompts
	if n := r.replicas(); n > 0 {
		b := ComputeBounds(prompts, n, r.cfg.CacheBlocks, r.cfg.BlockSize)
		res.Bounds = &b
	}
	return res, ctx.Err()
}

// session sends one session's turns in order, each when it is due, until
// turns ends; reqs bounds the requests.
func (r *Runner) session(turns, reqs context.Context, clients []*client, run string, s Session, add func(Record, Prompt)) {
	c := clients[0]
	var msgs []chatMessage
	if s.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: s.System})
	}
	due := s.Start
	for i, t := range s.Turns {
		if i > 0 {
			due = c.now() + t.Think
		}
		if !waitUntil(turns, c.now, due) {
			return
		}
		msgs = append(msgs, chatMessage{Role: "user", Content: t.User})
		body, err := buildBody(r.cfg.Model, msgs, t.MaxTokens)
		if err != nil {
			add(Record{Session: s.ID, Turn: i, Scheduled: due, Err: err.Error()}, Prompt{})
			return
		}
		rec := Record{Session: s.ID, Turn: i, Warmup: due < r.cfg.Warmup, RequestID: fmt.Sprintf("bench-%s-s%d-t%d", run, s.ID, i)}
		c := clients[targetOf(s.ID, i, len(clients))]
		reqCtx, cancel := context.WithTimeout(reqs, r.cfg.RequestTimeout)
		answer := c.do(reqCtx, body, due, &rec)
		cancel()
		p := r.blocks(body, due, answer)
		p.Warmup = rec.Warmup
		add(rec, p)
		if !rec.OK() {
			return
		}
		msgs = append(msgs, chatMessage{Role: "assistant", Content: answer})
	}
}

// blocks returns the prompt's engine blocks as the builtin:sim engine forms
// them (same chat rendering and tokenizer), and the blocks the engine holds
// after generating answer: the full blocks of prompt and answer, which a
// next turn that resends the answer can hit.
func (r *Runner) blocks(body []byte, at time.Duration, answer string) Prompt {
	p, err := r.tok.Chat(body)
	if err != nil {
		r.log.Debug("tokenize for bounds", "err", err)
		return Prompt{}
	}
	out := Prompt{At: at, Tokens: len(p.TokenIDs), Hashes: kvblock.Hashes(nil, r.seed, p.TokenIDs, r.cfg.BlockSize)}
	if answer != "" {
		ids, err := r.tok.Encode(answer, false)
		if err == nil {
			full := append(p.TokenIDs[:len(p.TokenIDs):len(p.TokenIDs)], ids...)
			out.Stored = kvblock.Hashes(nil, r.seed, full, r.cfg.BlockSize)
		}
	}
	return out
}

// replicas is the fleet size assumed for the bounds.
func (r *Runner) replicas() int {
	if r.cfg.Replicas > 0 {
		return r.cfg.Replicas
	}
	return len(r.cfg.EngineMetrics)
}

// waitUntil blocks until now() >= due; false when ctx ends first.
func waitUntil(ctx context.Context, now func() time.Duration, due time.Duration) bool {
	d := due - now()
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// targetOf returns the index, among n targets, of the one turn t of session
// s goes to: a hash of the two, the way a cloud load balancer spreads
// clients' connections. Not (s+t) mod n: with single-turn sessions that
// sends consecutive arrivals to the balancers in turn, in lockstep with
// each balancer's own round robin, so that 4 round-robin balancers sent 4
// arrivals in a row to one replica (W6, 2026-12-01: 550 runs of 4 among
// 3,525 requests), a queue no real client mix makes.
func targetOf(s, t, n int) int {
	if n <= 1 {
		return 0
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(s))
	binary.LittleEndian.PutUint64(b[8:], uint64(t))
	return int(xxh3.Hash(b[:]) % uint64(n))
}
