package balancer

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/inferrail/inferrail/balancer/decisionlog"
	"github.com/inferrail/inferrail/balancer/fleet"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/openai"
)

// recordDecision adds the decision of rq's attempt (from 1) on
// set.Replicas[idx] to the decision log when it is sampled: the one hook
// the request path calls, after the pick and before its lease, so the
// candidates' work is what the policy saw. A pick that then loses the race
// for its replica's last slot is followed by another record of the same
// attempt.
func (b *Balancer) recordDecision(rq *request, set *fleet.ModelSet, sc *scratch, idx, attempt int, d route.Decision, now time.Time) {
	if b.decisions == nil || !b.decisions.Sample() {
		return
	}
	m := rq.model
	rec := &decisionlog.Record{
		Time: now, RequestID: rq.id, Model: m.cfg.Name, Policy: m.policy.Name(), Mode: rq.mode, Attempt: attempt,
		PromptTokens: rq.tokens, PromptBlocks: len(rq.hashes), Turn: turnName[rq.turn], CachedTokens: d.CachedTokens,
		Reason: string(d.Reason), SummaryFallback: d.SummaryFallback,
		DecisionUS: float64(sc.took) / 1e3,
		Candidates: candidateRecords(m.policy, set, sc.cands, sc.exclude, d, now),
	}
	if idx >= 0 { // a shed request (route.ErrOverloaded) has no winner
		rec.Winner = set.Replicas[idx].ID
	}
	rec.Score, rec.EstimatedTTFTMS = pickFigures(d)
	b.decisions.Add(rec)
}

// turnName is a route.Turn as the decision log names it ("": unknown).
var turnName = [...]string{route.TurnFirst: "first", route.TurnLater: "later"}

// pickFigures returns the pick's score (nil where the policy does not score)
// and cost_model's estimated TTFT in milliseconds (nil for other policies).
func pickFigures(d route.Decision) (score, ttftMS *float64) {
	if d.Scores != nil || d.Score != 0 {
		score = ptr(d.Score)
	}
	if d.EstimatedTTFT > 0 {
		ttftMS = ptr(ms(d.EstimatedTTFT))
	}
	return score, ttftMS
}

// candidateRecords describes every candidate of a decision: its state, the
// work the policy's load model sees there, its KV usage, and the policy's
// prediction, score and (cost_model) estimates where it made them.
func candidateRecords(p route.Policy, set *fleet.ModelSet, cands []route.Candidate, exclude []int, d route.Decision, now time.Time) []decisionlog.Candidate {
	out := make([]decisionlog.Candidate, len(cands))
	for i := range cands {
		c := &cands[i]
		w := route.WorkOf(p, c, now)
		dc := decisionlog.Candidate{ID: c.ID, State: string(set.Replicas[i].State(now)),
			InFlight: w.InFlight, Pending: w.Pending, PrefillTokens: w.PrefillTokens, StepTokens: w.StepTokens}
		if !w.StepStart.IsZero() {
			dc.StepAgeMS = ptr(ms(now.Sub(w.StepStart)))
		}
		for _, x := range exclude {
			dc.Excluded = dc.Excluded || x == i
		}
		if c.Load.Known {
			dc.KVUsage = ptr(c.Load.KVUsage)
			dc.LoadStale = c.Load.Stale
		}
		dc.Answers = route.AnswersOf(c, now)
		if i < len(d.Cached) && d.Cached[i] >= 0 {
			dc.CachedTokens = ptr(int(d.Cached[i]))
		}
		if i < len(d.Scores) && !math.IsNaN(d.Scores[i]) {
			dc.Score = ptr(d.Scores[i])
		}
		if i < len(d.TTFTs) && d.TTFTs[i] >= 0 {
			dc.EstimatedTTFTMS = ptr(ms(d.TTFTs[i]))
			dc.QueueWaitMS = ptr(ms(d.Waits[i]))
		}
		if i < len(d.MemoryWaits) {
			switch m := d.MemoryWaits[i]; {
			case m == route.MemoryShort:
				dc.KVShort = true
			case m > 0:
				dc.MemoryWaitMS = ptr(ms(m))
			}
		}
		out[i] = dc
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// DecisionsResponse is the body of GET /debug/decisions.
type DecisionsResponse struct {
	// Last is the newest decision's sequence number (0: none yet); pass it
	// as after to get only newer ones.
	Last uint64 `json:"last"`
	// Decisions are the kept decisions after the cursor, oldest first.
	Decisions []decisionlog.Record `json:"decisions"`
}

// maxDecisionsPerAnswer bounds the limit parameter of GET /debug/decisions.
const maxDecisionsPerAnswer = 1000

// serveDecisions answers GET /debug/decisions?after=SEQ&limit=N: the
// latest sampled decisions (decision_log.recent of them are kept).
func (b *Balancer) serveDecisions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after uint64
	if s := q.Get("after"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			openai.BadRequest("after", "after must be a decision sequence number, got %q", s).Write(w)
			return
		}
		after = v
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > maxDecisionsPerAnswer {
			openai.BadRequest("limit", "limit must be in [1, %d], got %q", maxDecisionsPerAnswer, s).Write(w)
			return
		}
		limit = v
	}
	var recs []decisionlog.Record
	var last uint64
	if b.decisions != nil {
		recs, last = b.decisions.Recent(after, limit)
	}
	if recs == nil {
		recs = []decisionlog.Record{}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, DecisionsResponse{Last: last, Decisions: recs})
}
