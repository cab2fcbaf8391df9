package route

import (
	"math"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/load"
)

// PrefixIndex answers how long a prefix of a prompt a replica holds: the
// number of leading block hashes present (gossip/summary.View.LongestPrefix
// for one medium satisfies it through a one-line adapter). It is called on
// the request path, concurrently, and must not block.
type PrefixIndex interface {
	LongestPrefix(hashes []kvblock.Hash) (blocks int)
}

// PreparedPrompt is a request's block hashes prepared once for every
// candidate's index (gossip/summary.Prompt, with its bloom positions
// computed, satisfies it). route never looks inside it: it hands it to the
// indexes that implement PromptIndex. It must not change while a decision
// reads it.
type PreparedPrompt interface {
	// Len returns the number of blocks prepared.
	Len() int
}

// PromptIndex is an optional ability of a PrefixIndex: answering from a
// prompt prepared once per request (Request.Prompt) instead of from the raw
// hashes, so that asking many candidates hashes the prompt once and
// allocates nothing per candidate. Like LongestPrefix it is called
// concurrently on the request path and must not block.
type PromptIndex interface {
	PrefixIndex
	// LongestPrefixOf returns LongestPrefix of the hashes p was prepared
	// from, and true; or false when p is not a kind of preparation the
	// index understands (the policy then calls LongestPrefix).
	LongestPrefixOf(p PreparedPrompt) (blocks int, ok bool)
}

// Load is a replica's load report as this balancer received it: the
// sidecar's load.Report, as it wrote it, over the gossip or in the last
// response this balancer proxied from it, whichever is newer
// (docs/routing.md#the-load-model), with what the fleet knows about its
// arrival beside it: whether it is stale, judged once by the fleet.
type Load struct {
	// Report is the report as the sidecar wrote it (Running, Waiting,
	// KVUsage, InFlight, Pending, PrefillTokens).
	load.Report
	// Own is this balancer's share of Report's data-path counts, as the
	// sidecar counted it when it wrote the report. The load model replaces
	// it by the balancer's live counts (Candidate.Own, see Others).
	Own load.Share
	// Known reports whether a report has been received at all.
	Known bool
	// Stale reports whether the fleet judged the report too old (received
	// more than the gossip's load_max_age ago, or its member not alive): a
	// stale report is not used. Policies do not judge its age again.
	Stale bool
	// Exact reports whether Report's data-path counts are the sidecar's
	// exact counts (the fleet sets it for every sidecar's report). Without
	// them (a report of engine metrics only) policies fall back to the
	// engine's Running and Waiting, never below this balancer's own counts.
	Exact bool
	// Peers is the other balancers' own work on the replica as they sent
	// it (docs/routing.md#the-load-model), summed over those
	// heard from within the gossip's load_max_age; HasPeers reports whether
	// any was. It is at most a message's latency old, where a report is up
	// to a gossip period old.
	Peers    Work
	HasPeers bool
	// Residual is, with HasPeers, the work of origins the Peers do not
	// cover (requests sent by no balancer that shares its load, or by none),
	// taken from the newest report that breaks its counts down by origin.
	Residual Work
	// PeerAnswers gives, with HasPeers, the other balancers' followed
	// answers on the replica as they sent them (nil: none known). The wait
	// for KV memory counts them as this balancer's own (costModel.kvWait).
	PeerAnswers PeerAnswers
}

// Others returns the work of every other origin on the replica: the
// report's data-path counts with this balancer's share (Own) taken out. A
// policy adds it to this balancer's own counts (Candidate.Own), which are
// exact now, so nothing is counted twice and nothing this balancer finished
// since the report is still counted.
func (l *Load) Others() Work {
	return Work{
		InFlight:      int(max(l.InFlight-l.Own.InFlight, 0)),
		Pending:       int(max(l.Pending-l.Own.Pending, 0)),
		PrefillTokens: max(l.PrefillTokens-l.Own.PrefillTokens, 0),
	}
}

// Unseen returns the engine's waiting requests beyond those its sidecar is
// proxying: traffic that reaches the engine without the sidecar. Policies
// charge each Config.Cost.QueuedPromptTokens of prefill.
func (l *Load) Unseen() int { return int(max(l.Waiting-l.Pending, 0)) }

// Work is an amount of work on a replica.
type Work struct {
	// InFlight is the requests sent and not finished.
	InFlight int
	// Pending is the part of InFlight whose prefill is not over.
	Pending int
	// PrefillTokens is the uncached prompt tokens of the Pending requests.
	PrefillTokens int64
	// StepTokens is the part of PrefillTokens in the engine step that began
	// at StepStart (Counters.Step): this balancer's own requests sent before
	// the last step end it saw there. The rest queue behind that step.
	StepTokens int64
	// StepStart is when that step began (zero: no step end seen).
	StepStart time.Time
	// OutputReserve is the KV memory, in tokens, the InFlight requests'
	// outputs may still take (CostConfig.OutputReserve): this balancer's
	// own by each request's stated max_tokens, the others'
	// ExpectedOutputTokens each.
	OutputReserve int64
}

// Add adds o to w: the counts sum, and the step under way is the later of
// the two, holding both parts' in-step tokens (each was sent before a step
// end its sender saw, so the engine took it into that step or the next ones).
func (w *Work) Add(o Work) {
	w.InFlight += o.InFlight
	w.Pending += o.Pending
	w.PrefillTokens += o.PrefillTokens
	w.OutputReserve += o.OutputReserve
	w.StepTokens += o.StepTokens
	if o.StepStart.After(w.StepStart) {
		w.StepStart = o.StepStart
	}
}

// Decodes returns the requests past their prefill (decoding).
func (w Work) Decodes() int { return max(w.InFlight-w.Pending, 0) }

// Candidate is one replica in a snapshot: a plain value in a slice the fleet
// rebuilds when membership, health or caps change. Everything a policy reads
// is here or behind Own and Prefix, which are safe for concurrent use.
type Candidate struct {
	// ID names the replica (the gossip node name or a static replica's name).
	// It seeds prefix_hash placement, so it must be the same on every
	// balancer.
	ID string
	// Models lists the model names the replica serves.
	Models []string
	// Healthy reports whether the fleet currently routes to the replica.
	Healthy bool
	// Weight scales the replica's share (<= 0 means 1).
	Weight float64
	// MaxConcurrency caps Own.InFlight and MaxPending caps Own.Pending
	// (0: no cap). A replica at a cap is full and never picked.
	MaxConcurrency, MaxPending int
	// Own is this balancer's counts for the replica (nil: all zero).
	Own *Counters
	// Load is the gossiped load.
	Load Load
	// Prefix is the replica's prefix summary (nil: unknown).
	Prefix PrefixIndex
	// SummaryStale reports whether the gossip judged the summary too old
	// (not confirmed within summary_max_age): a stale summary is not used.
	SummaryStale bool
	// BlockSize is the replica's KV block size in tokens (0: the request's).
	// A replica whose block size differs from Request.BlockSize gets no
	// cache prediction.
	BlockSize int
	// CapacityBlocks is the replica's KV cache capacity in blocks (0:
	// unknown). A prompt with more blocks than that is never sent there.
	CapacityBlocks int
	// TTFTScale is the running ratio of the replica's measured to its
	// estimated times to first token (0: not measured yet). cost_model
	// charges each candidate its ratio relative to the mean of the
	// eligible candidates' (an unmeasured one counts as the mean): an error
	// of the constants that every replica shares changes no choice, and a
	// replica that has served is never cheaper than one that has not just
	// because the estimate was high.
	TTFTScale float64

	idHash uint64 // xxh3 of ID, filled by Prepare (0: compute per use)
}

// Prepare fills the derived fields of cands (the hash of each ID). The fleet
// should call it once when it builds a snapshot; policies work without it but
// then hash every ID on every decision.
func Prepare(cands []Candidate) {
	for i := range cands {
		cands[i].idHash = hashID(cands[i].ID)
	}
}

func hashID(id string) uint64 {
	h := xxh3.HashString(id)
	if h == 0 {
		h = 1 // 0 means "not prepared"
	}
	return h
}

func (c *Candidate) key() uint64 {
	if c.idHash != 0 {
		return c.idHash
	}
	return hashID(c.ID)
}

// serves reports whether the candidate serves model.
func (c *Candidate) serves(model string) bool {
	for _, m := range c.Models {
		if m == model {
			return true
		}
	}
	return false
}

// full reports whether the candidate is at one of its caps.
func (c *Candidate) full() bool {
	if c.Own == nil {
		return false
	}
	if c.MaxConcurrency > 0 && c.Own.InFlight.Load() >= int64(c.MaxConcurrency) {
		return true
	}
	return c.MaxPending > 0 && c.Own.Pending.Load() >= int64(c.MaxPending)
}

func (c *Candidate) weight() float64 {
	if c.Weight > 0 {
		return c.Weight
	}
	return 1
}

// own returns the balancer's own in-flight, pending and pending prefill
// tokens for the candidate.
func (c *Candidate) own() (inFlight, pending, tokens int64) {
	if c.Own == nil {
		return 0, 0, 0
	}
	return c.Own.InFlight.Load(), c.Own.Pending.Load(), c.Own.PendingPrefillTokens.Load()
}

// ownWork returns the balancer's own counts as a Work.
func (c *Candidate) ownWork() Work {
	if c.Own == nil {
		return Work{}
	}
	return c.Own.Snapshot()
}

// ttftScale returns c's correction relative to mean (see TTFTScale).
func (c *Candidate) ttftScale(mean float64) float64 {
	if c.TTFTScale > 0 && mean > 0 {
		return c.TTFTScale / mean
	}
	return 1
}

// meanTTFTScale returns the geometric mean of the measured TTFTScale of the
// eligible candidates (0: none measured).
func meanTTFTScale(cands []Candidate, elig []int32) float64 {
	sum, n := 0.0, 0
	for _, i := range elig {
		if s := cands[i].TTFTScale; s > 0 {
			sum += math.Log(s)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return math.Exp(sum / float64(n))
}
