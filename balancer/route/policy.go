package route

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/inferrail/inferrail/internal/kvblock"
)

// Errors returned by Pick. The HTTP layer maps them to 503 (with Retry-After
// for ErrAllFull and ErrOverloaded; the EPP answers those two 429).
var (
	// ErrNoCandidate means no healthy, untried replica serves the model (or
	// can hold the prompt).
	ErrNoCandidate = errors.New("no replica serves the model")
	// ErrAllFull means replicas serve the model but every one is at its
	// concurrency or pending cap.
	ErrAllFull = errors.New("every replica for the model is full")
	// ErrOverloaded means the work already on every eligible replica would
	// delay the request's first token by more than Config.ShedDelay
	// (cost_model): the fleet sheds it rather than queue it.
	ErrOverloaded = errors.New("every replica for the model is too loaded to answer in time")
)

// Policy picks a replica for a request. Implementations are safe for
// concurrent use, never block and do no I/O; the cache-aware ones record
// their placement in their overlay.
type Policy interface {
	// Name returns the policy's name (Config.Policy).
	Name() string
	// Pick returns the index into cands of the chosen replica and why. The
	// Decision's slices point into scratch and are valid until scratch is
	// reused. It returns ErrNoCandidate or ErrAllFull when nothing is
	// eligible. A nil scratch is allowed (it then allocates).
	Pick(req *Request, cands []Candidate, scratch *Scratch) (idx int, d Decision, err error)
}

// Reason says why a candidate was picked; the values are stable metric labels.
type Reason string

// Reasons.
const (
	ReasonRoundRobin   Reason = "round_robin"
	ReasonRandom       Reason = "random"
	ReasonLeastRequest Reason = "least_request"
	ReasonP2C          Reason = "p2c"
	// ReasonPrefixOwner: the prefix's rendezvous owner took it.
	ReasonPrefixOwner Reason = "prefix_owner"
	// ReasonLoadSpill: the preferred replica was above the load bound.
	ReasonLoadSpill Reason = "load_spill"
	// ReasonKVSpill: the preferred replica's KV memory could not hold the
	// request (cost_model).
	ReasonKVSpill Reason = "kv_spill"
	// ReasonNoPrefix: the prompt has no full block; least loaded.
	ReasonNoPrefix Reason = "no_prefix"
	// ReasonBestScore: kv_aware's highest blended score.
	ReasonBestScore Reason = "best_score"
	// ReasonLowestTTFT: cost_model's lowest estimated time to first token.
	ReasonLowestTTFT Reason = "lowest_ttft"
	// ReasonShed: every eligible replica's work would delay the request
	// past Config.ShedDelay, and it was refused (ErrOverloaded).
	ReasonShed Reason = "shed"
	// ReasonHotPrefix: the prefix's warm replica was saturated and the next
	// best became a second home for it.
	ReasonHotPrefix Reason = "hot_prefix_replica"
	// ReasonRotation: cost_model took the prompt, which no near candidate
	// holds any of, in turn over the near candidates (costModel.spread)
	// instead of the lowest estimate (a spill off the preferred replica
	// keeps its spill reason).
	ReasonRotation Reason = "rotation"
	// ReasonTPOTGuard: cost_model moved the request off the replica where
	// its prefill would have pushed an answer streaming there past the TPOT
	// objective (SLOConfig).
	ReasonTPOTGuard Reason = "tpot_guard"
	// ReasonOnlyCandidate: one eligible candidate.
	ReasonOnlyCandidate Reason = "only_candidate"
)

// Reasons of the peer baselines.
const (
	// ReasonSGLangImbalance: the fleet was imbalanced; the least loaded.
	ReasonSGLangImbalance Reason = "sglang_imbalance"
	// ReasonSGLangCacheHit: the tree's match was above cache_threshold.
	ReasonSGLangCacheHit Reason = "sglang_cache_hit"
	// ReasonSGLangLoadGate: the match's replica was over the load gate.
	ReasonSGLangLoadGate Reason = "sglang_load_gate"
	// ReasonSGLangCacheMiss: the match was at or below cache_threshold.
	ReasonSGLangCacheMiss Reason = "sglang_cache_miss"
	// ReasonSGLangFallback: the matched replica is not eligible; the first
	// eligible one.
	ReasonSGLangFallback Reason = "sglang_fallback"
	// ReasonDynamoLowestCost: dynamo_kv's lowest cost.
	ReasonDynamoLowestCost Reason = "dynamo_lowest_cost"
	// ReasonDynamoSampled: dynamo_kv's softmax sample (temperature > 0).
	ReasonDynamoSampled Reason = "dynamo_sampled"
	// ReasonLLMDMaxScore: llm_d's highest weighted score.
	ReasonLLMDMaxScore Reason = "llm_d_max_score"
)

// Decision explains a pick.
type Decision struct {
	// Reason is why the candidate was picked.
	Reason Reason
	// CachedTokens is the predicted cached prompt tokens on the pick, and
	// UncachedTokens the rest (what a lease counts: fleet.Replica.TryAcquire).
	CachedTokens, UncachedTokens int
	// EstimatedTTFT is cost_model's estimate for the pick (0 for others).
	EstimatedTTFT time.Duration
	// Score is the pick's score where the policy scores: kv_aware's blended
	// score in [0,1] (higher wins), cost_model's estimated time to first
	// token plus its miss penalty, in seconds (lower wins); for the peer
	// baselines sglang_cache_aware's tree match ratio, dynamo_kv's cost in
	// blocks (lower wins), llm_d's weighted score (higher wins).
	Score float64
	// Eligible is how many candidates passed the filter.
	Eligible int
	// SummaryFallback reports whether a missing or stale summary made the
	// policy assume the prefix_hash owner holds the prefix.
	SummaryFallback bool
	// Cached is the predicted cached tokens per candidate index (-1 where
	// not eligible); nil for the cache-blind policies and sglang_cache_aware
	// (whose tree answers for the pick only).
	Cached []int32
	// Scores is Score per candidate index (NaN where not eligible); nil for
	// the policies that do not score each candidate (the cache-blind ones,
	// prefix_hash, sglang_cache_aware).
	Scores []float64
	// TTFTs is cost_model's estimated time to first token per candidate
	// index and Waits the queue wait part of it (-1 where not eligible); nil
	// for the other policies.
	TTFTs, Waits []time.Duration
	// RetryAfter is, for a request refused with ErrOverloaded, the
	// estimated wait until the least delayed candidate's work would delay it
	// no more than Config.ShedDelay (its delay beyond it); 0 otherwise. The
	// HTTP layer's Retry-After says it in whole seconds, at least 1.
	RetryAfter time.Duration
	// MemoryWaits is cost_model's estimated wait for KV memory per
	// candidate index, part of its TTFT (0: it fits or nothing is known;
	// -1 where not eligible; MemoryShort where no wait could be estimated
	// and the candidate was skipped while another had room); nil for the
	// other policies.
	MemoryWaits []time.Duration
}

// MemoryShort marks, in Decision.MemoryWaits, a candidate short of KV
// memory with no estimate of the wait for it.
const MemoryShort = time.Duration(math.MaxInt64)

// Scratch holds per-decision buffers; reuse one per goroutine (or through a
// sync.Pool) so decisions do not allocate. The zero value is ready to use.
type Scratch struct {
	elig    []int32         // eligible candidate indices
	load    []float64       // effective load per eligible
	score   []float64       // per eligible
	queue   []float64       // cost_model: queue wait per eligible, ns
	delay   []float64       // cost_model: delay its load adds, per eligible, ns
	kvWait  []float64       // cost_model: estimated wait for KV memory, per eligible, ns (+Inf: short, no estimate)
	flight  []float64       // cost_model: requests in flight per unit of weight, per eligible
	occ     []float64       // cost_model: KV memory in use after the request, share of capacity, per eligible (-1: unknown)
	fill    []float64       // cost_model: occ counting the memory holding contexts (kvRoom.fill), per eligible (-1: unknown)
	ahead   []queue         // cost_model: the prefill work ahead of the request, per eligible (the TPOT guard's)
	decodes []int           // cost_model: the requests decoding there, per eligible
	ends    []answerEnd     // cost_model: one candidate's followed answers (Counters.appendEnds, appendPeerEnds)
	peerAns []PeerAnswer    // cost_model: one candidate's peers' answers (Load.PeerAnswers)
	memEnds []memEnd        // cost_model: releaseSteps' scratch
	cached  []int32         // predicted cached tokens per candidate
	common  []int32         // cost_model: the most any other eligible candidate holds, per eligible (commonCached)
	scores  []float64       // Decision.Scores, per candidate
	ttfts   []time.Duration // Decision.TTFTs, per candidate
	waits   []time.Duration // Decision.Waits, per candidate
	mems    []time.Duration // Decision.MemoryWaits, per candidate
	hits    []overlayHit
	uniform bool // every eligible has the same weight
}

// NewScratch returns a Scratch sized for n candidates.
func NewScratch(n int) *Scratch {
	return &Scratch{
		elig:   make([]int32, 0, n),
		load:   make([]float64, 0, n),
		score:  make([]float64, 0, n),
		queue:  make([]float64, 0, n),
		delay:  make([]float64, 0, n),
		kvWait: make([]float64, 0, n),
		cached: make([]int32, 0, n),
		scores: make([]float64, 0, n),
		hits:   make([]overlayHit, 0, maxOverlayPoints+2),
	}
}

// New returns the policy cfg names, after validating cfg.
func New(cfg Config) (Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("route config: %w", err)
	}
	b := &base{cfg: cfg, peerLoad: !IsBaseline(cfg.Policy)}
	b.rng.seed(cfg.Seed)
	switch cfg.Policy {
	case PolicyRoundRobin:
		return &roundRobin{base: b}, nil
	case PolicyRandom:
		return &random{base: b}, nil
	case PolicyLeastRequest:
		return &leastRequest{base: b}, nil
	case PolicyP2C:
		return &p2c{base: b}, nil
	case PolicyPrefixHash:
		return &prefixHash{base: b}, nil
	case PolicySGLangCacheAware: // its tree is its overlay
		return &sglangCacheAware{base: b, tree: newSGLangTree()}, nil
	}
	if cfg.Overlay.TTL > 0 || cfg.Overlay.TextTTL > 0 {
		b.overlay = NewOverlay(cfg.Overlay, cfg.PrefixBlocks)
		b.shares = cfg.Overlay.Share && (cfg.Policy == PolicyCostModel || cfg.Policy == PolicyKVAware)
	}
	switch cfg.Policy {
	case PolicyKVAware:
		return &kvAware{base: b}, nil
	case PolicyDynamoKV:
		return &dynamoKV{base: b}, nil
	case PolicyLLMD:
		return &llmD{base: b}, nil
	}
	p := &costModel{base: b, est: newEstimator(cfg.Cost)}
	// Balancers with one config have different seeds (the balancer mixes
	// its name in), so their rotations start at different candidates and
	// their first picks of prompts no replica holds do not all go to one.
	p.last.Store(int64(mix64(cfg.Seed) >> 1))
	return p, nil
}

// Settler is an optional ability of a Policy: hearing that a placed
// request got its first token on replicaID at now, so that what the policy
// remembers of the placement (its overlay, Overlay.Settle) expires soon after
// instead of at its full TTL. The caller checks for it with a type
// assertion; a policy without it remembers nothing to settle. Settle is
// called concurrently and must not block.
type Settler interface {
	Settle(hashes []kvblock.Hash, replicaID string, now time.Time)
}

// base is what every policy shares.
type base struct {
	cfg     Config
	rng     rng
	overlay *Overlay // nil: none
	// shares reports whether the overlay's placements go to the other
	// balancers (Sharer).
	shares bool
	// peerLoad reports whether the load model counts the load other
	// balancers send (Load.Peers): every policy but the peers' baselines,
	// whose routers do not share their counts by default.
	peerLoad bool
}

// overlayOf returns the policy's overlay (nil: none; the tests read it).
func (b *base) overlayOf() *Overlay { return b.overlay }

// Settle settles the placement in the policy's overlay (Settler; a no-op
// without an overlay).
func (b *base) Settle(hashes []kvblock.Hash, replicaID string, now time.Time) {
	if b.overlay != nil {
		b.overlay.Settle(hashes, replicaID, now)
	}
}

// Name returns the policy name.
func (b *base) Name() string { return b.cfg.Policy }

// candidateScores returns s.scores sized for n candidates: NaN everywhere but
// the eligible ones, which get s.score[k] / div.
func candidateScores(s *Scratch, n int, div float64) []float64 {
	s.scores = grow(s.scores, n)
	for i := range s.scores {
		s.scores[i] = math.NaN()
	}
	for k, i := range s.elig {
		s.scores[i] = s.score[k] / div
	}
	return s.scores
}

func (b *base) now(req *Request) time.Time {
	if req.Now.IsZero() {
		return time.Now()
	}
	return req.Now
}

// PromptPreparer prepares a request's block hashes for the candidates'
// PromptIndexes, in storage it reuses: the prepared prompt is valid until the
// next Prepare. The fleet's (*fleet.Prompt) prepares them for the gossiped
// summaries' filters; route never looks inside the result.
type PromptPreparer interface {
	Prepare(hashes []kvblock.Hash) PreparedPrompt
}

// PreparePrompt returns hashes prepared by pp when p asks the candidates'
// indexes (usesPrefixIndex), and nil otherwise or without hashes. A caller
// prepares once per request and passes the result in Request.Prompt to
// every Pick of that request (retries, endpoint-picker rounds).
func PreparePrompt(p Policy, hashes []kvblock.Hash, pp PromptPreparer) PreparedPrompt {
	if len(hashes) == 0 || pp == nil || !usesPrefixIndex(p) {
		return nil
	}
	return pp.Prepare(hashes)
}

// usesPrefixIndex reports whether p asks the candidates' PrefixIndex
// (kv_aware, cost_model and the dynamo_kv and llm_d baselines do; the
// cache-blind policies, prefix_hash and sglang_cache_aware do not), so that
// the prompt is prepared only when it pays off.
func usesPrefixIndex(p Policy) bool {
	switch p.(type) {
	case *kvAware, *costModel, *dynamoKV, *llmD:
		return true
	}
	return false
}
