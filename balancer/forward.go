package balancer

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/proxy"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
	"github.com/inferrail/inferrail/internal/openai"
)

var jsonMarshal = json.Marshal

// errRouteDeadline cancels an attempt when timeouts.route passed before any
// first byte.
var errRouteDeadline = errors.New("no first byte within timeouts.route")

// scratch holds one request's reusable buffers.
type scratch struct {
	cands   []route.Candidate
	rs      *route.Scratch
	hashes  []kvblock.Hash
	exclude []int
	tried   []*fleet.Replica
	full    []*fleet.Replica
	// prompt prepares the request's hashes for the replicas' summaries
	// (route.Request.Prompt), reused across requests.
	prompt fleet.Prompt
	// took is how long the last decide took (the decision log's).
	took time.Duration
}

// maxPooledPromptBlocks bounds the prepared prompt a pooled scratch keeps
// (about 64 bytes a block): a rare huge prompt does not pin its buffers.
const maxPooledPromptBlocks = 8192

func (b *Balancer) getScratch() *scratch {
	if s, ok := b.scratch.Get().(*scratch); ok {
		return s
	}
	return &scratch{rs: route.NewScratch(16)}
}

func (b *Balancer) putScratch(s *scratch) {
	clear(s.cands) // drop pointers into old snapshots
	clear(s.tried)
	clear(s.full)
	s.tried, s.full = s.tried[:0], s.full[:0]
	if s.prompt.Len() > maxPooledPromptBlocks {
		s.prompt = fleet.Prompt{}
	}
	b.scratch.Put(s)
}

// request is one client request on its way through forward.
type request struct {
	start  time.Time
	id     string
	kind   kind
	model  *model
	body   []byte
	tokens int // prompt tokens (0: not tokenized)
	hashes []kvblock.Hash
	stream bool // the client asked for a stream
	// maxTokens is the client's bound on the output tokens (0: none).
	maxTokens int
	// turn is where the request stands in its conversation (parsed.turn).
	turn    route.Turn
	outcome string
	mode    string // modeProxy or modeEPP

	// estimated reports whether tokens and hashes are the text prefix
	// identity (textprefix.go), not the engine's tokens and blocks.
	estimated bool
}

// outputReserve is the KV memory, in tokens, the request's lease counts for
// its output (route.CostConfig.OutputReserve of its model's routing).
func (rq *request) outputReserve() int {
	return rq.model.cfg.Routing.Cost.OutputReserve(rq.maxTokens)
}

// forward handles a proxied route: read, resolve, tokenize, then attempts.
func (b *Balancer) forward(w http.ResponseWriter, r *http.Request, k kind) {
	rq := request{start: b.now(), id: w.Header().Get(HeaderRequestID), kind: k, mode: modeProxy}
	if b.tr != nil { // the request's server span (observability.go)
		var rs reqSpan
		w, r, rs = b.traceRequest(w, r, rq.id)
		defer b.endRequest(rs, &rq)
	}
	b.m.inFlight.Inc()
	defer b.m.inFlight.Dec()
	modelLabel := "unknown"
	defer func() { b.m.requests.WithLabelValues(modelLabel, k.String(), rq.outcome, rq.mode).Inc() }()
	reject := func(e *openai.Error) {
		rq.outcome = outcomeBadRequest
		e.Write(w)
	}

	body, oerr := b.readBody(w, r)
	if oerr != nil {
		reject(oerr)
		return
	}
	sc := b.getScratch()
	defer b.putScratch(sc)
	if oerr := b.prepare(r.Context(), &rq, body, sc); oerr != nil {
		reject(oerr)
		return
	}
	modelLabel = rq.model.cfg.Name
	adm, oerr := b.admit(w, r, rq.model, rq.tokens, body)
	if oerr != nil {
		rq.outcome = outcomeRejected
		oerr.Write(w)
		return
	}
	mw := adm.Meter(w) // rate-limit headers; completion tokens counted (gate.go)
	defer func() { adm.Charge(r.Context(), mw.Completion()) }()
	b.serveCached(mw, r, &rq, sc) // the response cache, else b.attempts (respcache.go)
}

// prepare parses body once, resolves its model and tokenizes and hashes its
// prompt into rq (model, body, tokens, hashes in sc.hashes): the step every
// mode that routes a request shares.
func (b *Balancer) prepare(ctx context.Context, rq *request, body []byte, sc *scratch) *openai.Error {
	p, oerr := b.parse(ctx, rq.kind, body, b.fleet.Snapshot())
	if oerr != nil {
		return oerr
	}
	m := p.model
	rq.model, rq.body, rq.stream, rq.maxTokens, rq.turn = m, p.body, p.stream, p.maxTokens, p.turn
	if rq.kind != kindEmbeddings {
		if p.reason == reasonNoTokenizer && m.cfg.TextPrefix.Enabled {
			p.reason = b.prepareText(rq, p, sc)
			if p.reason == "" {
				return nil
			}
		}
		if p.reason != "" {
			b.m.unpredicted.WithLabelValues(m.cfg.Name, p.reason).Inc()
		} else {
			rq.tokens = len(p.ids)
			sc.hashes = m.hashes(sc.hashes[:0], p.ids, p.salt)
			rq.hashes = sc.hashes
			b.m.promptTokens.WithLabelValues(m.cfg.Name).Observe(float64(len(p.ids)))
		}
	}
	return nil
}

// preparedPrompt prepares rq's hashes for the replicas' summaries once per
// request; route decides whether its model's policy asks them (nil
// otherwise). A text-prefix identity has no summary to ask.
func (sc *scratch) preparedPrompt(rq *request) route.PreparedPrompt {
	if rq.estimated {
		return nil
	}
	return route.PreparePrompt(rq.model.policy, rq.hashes, &sc.prompt)
}

// decide runs rq's policy over set's candidates at now, without the
// candidate indices in sc.exclude, and records the decision time: the
// routing step every mode shares. It neither leases nor counts the pick.
func (b *Balancer) decide(rq *request, set *fleet.ModelSet, now time.Time, prep route.PreparedPrompt, sc *scratch) (int, route.Decision, error) {
	m := rq.model
	t0 := time.Now()
	sc.cands = set.Candidates(now, sc.cands)
	req := route.Request{Model: m.cfg.Name, Hashes: rq.hashes, BlockSize: m.cfg.BlockSize,
		PromptTokens: rq.tokens, OutputTokens: rq.maxTokens, Now: now, Exclude: sc.exclude, Prompt: prep, TextPrefix: rq.estimated,
		Turn: rq.turn}
	idx, d, err := m.policy.Pick(&req, sc.cands, sc.rs)
	sc.took = time.Since(t0)
	b.m.decision.WithLabelValues(m.cfg.Name, m.policy.Name(), rq.mode).Observe(sc.took.Seconds())
	return idx, d, err
}

// pick decides rq's replica (decide) and leases it as one step, under the
// model's pick lock, and records the decision: requests routed at one
// instant by this balancer then see each other's leases. Without the lock
// two long prompts decided concurrently both saw the same replica idle and
// queued there, one behind the other, while another replica idled. ok is
// false when the replica lost its last slot between the candidates'
// snapshot and the lease (the caller picks again without it).
func (b *Balancer) pick(rq *request, set *fleet.ModelSet, now time.Time, prep route.PreparedPrompt, sc *scratch, attempt int) (idx int, d route.Decision, ticket route.Ticket, ok bool, err error) {
	m := rq.model
	m.pickMu.Lock()
	idx, d, err = b.decide(rq, set, now, prep, sc)
	if err == nil {
		ticket, ok = set.Replicas[idx].TryAcquire(d.UncachedTokens, rq.outputReserve())
	}
	m.pickMu.Unlock()
	if err == nil || errors.Is(err, route.ErrOverloaded) {
		b.recordDecision(rq, set, sc, idx, attempt, d, now)
	}
	return idx, d, ticket, ok, err
}

// attempts picks a replica and proxies the request, moving it to another
// replica only before its first response byte, within timeouts.route.
func (b *Balancer) attempts(w http.ResponseWriter, r *http.Request, rq *request, sc *scratch) {
	m := rq.model
	cfg := b.cfg.Retry
	deadline := rq.start.Add(b.cfg.Timeouts.Route)
	var last *http.Response // a retryable status response kept in case it is the last
	var lastErr error
	defer func() {
		if last != nil {
			last.Body.Close()
		}
	}()
	// The prompt is prepared for the summaries once, for every attempt.
	prep := sc.preparedPrompt(rq)
	attempt := 0
	for {
		if attempt > 0 {
			wait := backoff(cfg.BackoffBase, cfg.BackoffMax, attempt)
			if b.now().Add(wait).After(deadline) {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-r.Context().Done():
				t.Stop()
				rq.outcome = outcomeClientGone
				return
			case <-t.C:
			}
		}
		now := b.now()
		set := b.fleet.Snapshot().Models[m.cfg.Name]
		if set == nil {
			break
		}
		sc.exclude = sc.exclude[:0]
		for i, rep := range set.Replicas {
			if containsReplica(sc.tried, rep) || containsReplica(sc.full, rep) {
				sc.exclude = append(sc.exclude, i)
			}
		}
		idx, d, ticket, ok, err := b.pick(rq, set, now, prep, sc, attempt+1)
		if errors.Is(err, route.ErrOverloaded) {
			if last != nil { // a retry: the kept answer is the request's
				break
			}
			rq.outcome = outcomeShed
			b.m.reasons.WithLabelValues(m.cfg.Name, string(d.Reason)).Inc()
			w.Header().Set("Retry-After", openai.RetryAfter(d.RetryAfter))
			openai.Unavailable("every replica serving %s is too loaded to answer in time; retry later", m.cfg.Name).Write(w)
			return
		}
		if err != nil && len(sc.tried) > 0 {
			// Every other replica is out: untried ones go first, then
			// the tried ones again.
			sc.tried = sc.tried[:0]
			clear(sc.tried[:cap(sc.tried)])
			continue
		}
		if err != nil {
			if errors.Is(err, route.ErrAllFull) || (errors.Is(err, route.ErrNoCandidate) && len(sc.full) > 0 && attempt == 0) {
				if last == nil && lastErr == nil {
					rq.outcome = outcomeFull
					w.Header().Set("Retry-After", "1")
					openai.Unavailable("every replica serving %s is at its capacity; retry later", m.cfg.Name).Write(w)
					return
				}
			}
			if attempt > 0 && last == nil && errors.Is(lastErr, fleet.ErrReplicaDown) {
				// Every replica is out right now, and this request's
				// attempt was cut only because the balancer took its
				// replica out while it waited (a failure detector's false
				// alarm on a starved machine takes them all out at once,
				// and they are back within seconds): wait for one within
				// timeouts.route rather than fail the request.
				continue
			}
			break
		}
		rep := set.Replicas[idx]
		if !ok {
			// Lost a race for its last slot: pick again without it.
			sc.full = append(sc.full, rep)
			continue
		}
		attempt++
		if d.SummaryFallback {
			b.m.fallback.WithLabelValues(m.cfg.Name).Inc()
		}
		b.m.reasons.WithLabelValues(m.cfg.Name, string(d.Reason)).Inc()
		if last != nil {
			last.Body.Close()
			last = nil
		}
		ar, span := b.traceAttempt(r, rq, len(sc.cands), rep, &d, attempt)
		done, retry, resp, err := b.try(w, ar, rq, rep, ticket, d, idx, deadline)
		b.endAttempt(span, rq, done, retry, resp, err)
		if done {
			return
		}
		sc.tried = append(sc.tried, rep)
		last, lastErr = resp, err
		if attempt >= cfg.MaxAttempts || !b.now().Before(deadline) {
			break
		}
		b.m.retries.WithLabelValues(m.cfg.Name, retry).Inc()
	}
	// Out of attempts, time or replicas.
	switch {
	case last != nil:
		rq.outcome = outcomeUpstream5xx
		_, _ = proxy.Stream(w, last, http.Header{HeaderRequestID: {rq.id}, HeaderReplica: last.Header[HeaderReplica]})
		last = nil
	case lastErr != nil && (errors.Is(lastErr, openai.ErrMalformedAnswer) || errors.Is(lastErr, proxy.ErrBodyEnded)):
		rq.outcome = outcomeUnreachable
		b.log.Warn("no replica answered in the OpenAI format", "model", m.cfg.Name, "request_id", rq.id, "attempts", attempt, "err", lastErr)
		openai.StatusError(http.StatusBadGateway, "no replica sent a well-formed answer").Write(w)
	case lastErr != nil && errors.Is(lastErr, errRouteDeadline):
		rq.outcome = outcomeUnreachable
		openai.StatusError(http.StatusGatewayTimeout, "no replica answered in time").Write(w)
	case lastErr != nil:
		rq.outcome = outcomeUnreachable
		b.log.Warn("no replica could be reached", "model", m.cfg.Name, "request_id", rq.id, "attempts", attempt, "err", lastErr)
		openai.StatusError(http.StatusBadGateway, "no replica could be reached").Write(w)
	default:
		rq.outcome = outcomeNoReplica
		w.Header().Set("Retry-After", "1")
		openai.Unavailable("no healthy replica serves %s", m.cfg.Name).Write(w)
	}
}

// try runs one attempt on rep, whose caps already count it. done reports
// that the request is finished (answered, or the client is gone). Otherwise
// the attempt failed before its first byte: retry names why, and resp (a
// 502/503/504, body unread) or err is what it got. ticket is the lease's
// (fleet.Replica.TryAcquire); rep is candidate pick of decision d.
func (b *Balancer) try(w http.ResponseWriter, r *http.Request, rq *request, rep *fleet.Replica, ticket route.Ticket, d route.Decision, pick int, deadline time.Time) (done bool, retry string, resp *http.Response, err error) {
	ls := &lease{rep: rep, uncached: d.UncachedTokens, output: rq.outputReserve(), ticket: ticket}
	if rq.stream {
		ls.answer = rep.Counters.Follow(rq.maxTokens, ls.output)
	}
	if !rq.stream {
		// Its first token is invisible: the prefill is taken to end at the
		// estimate, so its decode is not counted as queued prefill.
		ls.prefillAfter(b.prefillEstimate(rq, d))
	}
	actx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	g := proxy.NewGuard(cancel)
	stopDown := context.AfterFunc(rep.Down(), func() { g.Cancel(fleet.ErrReplicaDown) })
	timer := time.AfterFunc(time.Until(deadline), func() { g.Cancel(errRouteDeadline) })
	sent := b.now()
	hdr := http.Header{HeaderRequestID: {rq.id}}
	if rep.Member() != nil { // a sidecar: it reports its load with the response
		hdr[load.Origin] = []string{b.name}
	}
	tp, ts := b.tr.Traceparent(actx) // the attempt's span is the upstream's parent ("": off)
	setTraceHeaders(hdr, tp, ts)
	// Once the replica's sidecar says the engine runs the request (102),
	// neither the replica going down (a drain) nor the route deadline
	// cancels it: accepted work is finished where it is.
	resp, err = b.proxy.Send(actx, rep.Upstream(), r, rq.body, hdr, g.Arrived)
	g.Arrived()
	stopDown()
	timer.Stop()
	if err == nil && actx.Err() != nil { // cancelled just before the headers came
		resp.Body.Close()
		resp, err = nil, context.Cause(actx)
	}
	if err != nil {
		ls.release()
		if r.Context().Err() != nil {
			rq.outcome = outcomeClientGone
			return true, "", nil, nil
		}
		cause := context.Cause(actx)
		switch {
		case errors.Is(cause, fleet.ErrReplicaDown):
			return false, "replica_down", nil, cause
		case errors.Is(cause, errRouteDeadline):
			b.fleet.ReportFailure(rep)
			return false, "route_deadline", nil, errRouteDeadline
		case errors.Is(err, proxy.ErrFirstByteTimeout):
			b.fleet.ReportFailure(rep)
			return false, "first_byte_timeout", nil, err
		}
		var de *proxy.DialError
		if errors.As(err, &de) {
			b.fleet.ReportFailure(rep)
			return false, "dial", nil, err
		}
		// The connection failed before any response byte (the replica
		// died or reset it): nothing reached the client, so the request
		// moves on like after a 502.
		b.fleet.ReportFailure(rep)
		b.log.Debug("attempt failed before its first byte", "replica", rep.ID, "request_id", rq.id, "err", err)
		return false, "upstream_error", nil, err
	}
	b.observeLoad(rep, resp)
	if proxy.Retryable(resp, nil) {
		ls.release()
		b.fleet.ReportFailure(rep)
		resp.Header.Set(HeaderReplica, rep.ID)
		return false, "status_" + strconv.Itoa(resp.StatusCode), resp, nil
	}
	if resp.StatusCode/100 == 2 {
		// An answer that is not what an OpenAI-compatible engine sends
		// (garbage under a 200) fails here, before its first byte
		// reaches the client: it counts like a 5xx and moves on.
		if perr := proxy.Peek(resp, openai.NewAnswerCheck(resp.Header)); perr != nil {
			resp.Body.Close()
			ls.release()
			if r.Context().Err() != nil {
				rq.outcome = outcomeClientGone
				return true, "", nil, nil
			}
			b.fleet.ReportFailure(rep)
			b.log.Debug("answer failed before its first byte", "replica", rep.ID, "request_id", rq.id, "err", perr)
			if errors.Is(perr, openai.ErrMalformedAnswer) || errors.Is(perr, proxy.ErrBodyEnded) {
				return false, "malformed", nil, perr
			}
			return false, "upstream_error", nil, perr
		}
	}
	defer ls.release()
	prefilled := func(firstToken bool) {
		now := b.now()
		var first time.Time // an estimated end is no step end
		if firstToken {
			first = now
			ls.answer.Token(now)
		}
		ls.prefill(first)
		if s, ok := rq.model.policy.(route.Settler); ok {
			s.Settle(rq.settleHashes(), rep.ID, now)
		}
		b.m.ttft.WithLabelValues(rq.model.cfg.Name, rq.model.policy.Name(), rep.ID).Observe(now.Sub(rq.start).Seconds())
		if rq.stream {
			rep.ObserveTTFT(now.Sub(sent), d.EstimatedTTFT)
		}
	}
	if rq.stream && resp.StatusCode/100 == 2 && openai.IsEventStream(resp.Header) {
		resp.Body = &openai.FirstTokenReader{R: resp.Body,
			OnFirstToken: func() { prefilled(true) },
			OnLater: func(events int) {
				now := b.now()
				ls.answer.Tokens(now, events)
				rep.Counters.StepEnded(now)
			}}
	} else {
		prefilled(false)
	}
	extra := http.Header{HeaderRequestID: {rq.id}, HeaderReplica: {rep.ID}}
	extra[HeaderServerTiming] = append(resp.Header.Values(HeaderServerTiming), serverTiming(rq.start, sent, b.now(), &d, pick))
	if rq.tokens > 0 {
		extra[HeaderPromptTokens] = []string{strconv.Itoa(rq.tokens)}
		extra[HeaderCachedTokens] = []string{strconv.Itoa(d.CachedTokens)}
		if rq.estimated {
			extra[HeaderTokensEstimated] = []string{"true"}
		}
		b.m.cachedTokens.WithLabelValues(rq.model.cfg.Name).Observe(float64(d.CachedTokens))
	}
	switch {
	case resp.StatusCode >= 500:
		rq.outcome = outcomeUpstream5xx
	case resp.StatusCode >= 400:
		rq.outcome = outcomeClientError
	default:
		rq.outcome = outcomeOK
	}
	// A success is an answer that went through whole: one that breaks or
	// turns malformed on the way counts as a failure, so the count of
	// failures in a row is reset only by whole answers.
	_, err = proxy.Stream(w, resp, extra)
	switch {
	case err == nil:
		b.fleet.ReportSuccess(rep)
	case errors.Is(err, proxy.ErrClientGone) || r.Context().Err() != nil:
		rq.outcome = outcomeClientGone
	default:
		// Broken or turned malformed after its first byte: the client's
		// answer cannot be replayed, but the replica's failure counts.
		rq.outcome = outcomeBroken
		b.fleet.ReportFailure(rep)
		b.log.Warn("stream broke after its first byte", "replica", rep.ID, "request_id", rq.id, "err", err)
		// Abort the client's response so it sees the failure.
		endBrokenAttempt(r)
		panic(http.ErrAbortHandler)
	}
	return true, "", nil, nil
}

// prefillEstimate returns how long a non-streaming request's prefill is
// taken to last: the policy's estimate, or the cost model's idle estimate.
func (b *Balancer) prefillEstimate(rq *request, d route.Decision) time.Duration {
	if d.EstimatedTTFT > 0 {
		return d.EstimatedTTFT
	}
	return rq.model.cfg.Routing.Cost.IdleTTFT(rq.tokens, d.CachedTokens)
}

// backoff returns the wait before attempt n+1 (n >= 1): base doubled per
// attempt, capped, with up to 25% jitter.
func backoff(base, ceiling time.Duration, n int) time.Duration {
	d := base << min(n-1, 20)
	d = min(d, ceiling)
	if d > 0 {
		d += time.Duration(rand.Int64N(int64(d)/4 + 1))
	}
	return d
}

func containsReplica(list []*fleet.Replica, r *fleet.Replica) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}
