package fleet

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferrail/inferrail/balancer/proxy"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/gossip"
)

// ErrReplicaDown is the cause of a replica's Down context when it is marked
// down: ejected, failing its probes, or gone from the gossip.
var ErrReplicaDown = errors.New("replica marked down")

// Spec describes a replica: everything about it that comes from config or
// gossip metadata and does not change while it lives.
type Spec struct {
	// ID names the replica (a static replica's name or the gossip node name).
	ID string
	// URL is the base URL requests go to (scheme, host and optional path
	// prefix).
	URL *url.URL
	// H2C reports whether the replica is reached over HTTP/2 with prior
	// knowledge (sidecars, and engines configured so); otherwise HTTP/1.1.
	H2C bool
	// Static reports whether the replica comes from the config or from DNS
	// discovery: an engine or provider without a sidecar, not a gossip
	// member.
	Static bool
	// Group is the DNS discovery group that found the replica ("": from
	// the config or the gossip).
	Group string
	// Models lists the model names served.
	Models []string
	// BlockSize is the KV block size in tokens (0: unknown).
	BlockSize int
	// MaxConcurrency and MaxPending cap this balancer's requests in flight
	// and waiting for their first byte (0: no cap).
	MaxConcurrency, MaxPending int
	// CapacityBlocks is the KV cache capacity in blocks (0: unknown).
	CapacityBlocks int
	// Weight scales the replica's share (0: 1).
	Weight float64
	// Adapters is how many of the last Models are LoRA adapters of the
	// first, the base model (gossip.Meta.Adapters).
	Adapters int
	// APIKey is sent upstream in place of the client's credentials ("":
	// the client's request headers go as they came).
	APIKey string
	// PathPrefix replaces the leading /v1 of request paths ("": kept).
	PathPrefix string
	// ProbePath overrides the health probe path ("": health.probe_path).
	ProbePath string
	// Draining takes the replica out of routing: requests already on it
	// finish, new ones go elsewhere.
	Draining bool
}

// Upstream returns where the proxy sends the replica's attempts.
func (s *Spec) Upstream() proxy.Upstream {
	return proxy.Upstream{Base: s.URL, H2C: s.H2C, APIKey: s.APIKey, PathPrefix: s.PathPrefix}
}

// LoRABase returns the base model of name when name is one of the
// replica's LoRA adapters.
func (s *Spec) LoRABase(name string) (base string, ok bool) {
	if s.Adapters <= 0 || s.Adapters >= len(s.Models) {
		return "", false
	}
	for _, m := range s.Models[len(s.Models)-s.Adapters:] {
		if m == name {
			return s.Models[0], true
		}
	}
	return "", false
}

// equal reports whether a and b describe the same replica.
func (a *Spec) equal(b *Spec) bool {
	if a.ID != b.ID || a.URL.String() != b.URL.String() || a.H2C != b.H2C || a.Static != b.Static ||
		a.BlockSize != b.BlockSize || a.MaxConcurrency != b.MaxConcurrency || a.MaxPending != b.MaxPending ||
		a.CapacityBlocks != b.CapacityBlocks || a.Weight != b.Weight || a.Adapters != b.Adapters || len(a.Models) != len(b.Models) ||
		a.APIKey != b.APIKey || a.PathPrefix != b.PathPrefix || a.Draining != b.Draining || a.ProbePath != b.ProbePath ||
		a.Group != b.Group {
		return false
	}
	for i := range a.Models {
		if a.Models[i] != b.Models[i] {
			return false
		}
	}
	return true
}

// Replica is one upstream. Its identity is immutable; its counters and health
// are updated atomically and are safe for concurrent use.
type Replica struct {
	Spec
	// Counters are this balancer's in-flight and pending counts, shared with
	// the routing candidates.
	Counters route.Counters

	health health

	member atomic.Pointer[gossip.Member] // nil for static replicas
	// report is the newest load report of a response (nil: none yet);
	// logTTFT the log of the TTFT correction, as float64 bits (report.go).
	report      atomic.Pointer[responseReport]
	logTTFT     atomic.Uint64
	ttftSamples atomic.Int64

	// changed is set when Counters change and cleared when ShareLoad
	// sends them (peers.go); peers holds the other balancers' work here
	// as they last sent it.
	changed atomic.Bool
	peersMu sync.Mutex // protects peers
	peers   []peerWork
	// peerMaxAge is how long a peer's load counts after its last message
	// (Config.LoadMaxAge).
	peerMaxAge time.Duration

	downMu     sync.Mutex // protects downCtx and downCancel
	downCtx    context.Context
	downCancel context.CancelCauseFunc
}

func newReplica(s Spec) *Replica {
	r := &Replica{Spec: s}
	r.health.probeOK.Store(true)
	r.downCtx, r.downCancel = context.WithCancelCause(context.Background())
	return r
}

// Down returns a context that is cancelled, with cause ErrReplicaDown, when
// the replica is marked down. A request waiting for its first byte watches it.
func (r *Replica) Down() context.Context {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	return r.downCtx
}

// markDown cancels the current Down context.
func (r *Replica) markDown() {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	r.downCancel(ErrReplicaDown)
}

// markUp installs a fresh Down context if the current one is cancelled.
func (r *Replica) markUp() {
	r.downMu.Lock()
	defer r.downMu.Unlock()
	if r.downCtx.Err() != nil {
		r.downCtx, r.downCancel = context.WithCancelCause(context.Background())
	}
}

// TryAcquire counts a request against the replica's caps: it increments
// InFlight and Pending only if both stay within MaxConcurrency and
// MaxPending, with compare-and-swap so concurrent callers never overshoot,
// and adds uncached to PendingPrefillTokens (Counters.Sent) and output (the
// request's route.CostConfig.OutputReserve) to OutputReserve. It reports
// whether the request was counted, with its ticket; release it with
// Counters.Prefilled and Counters.Done.
func (r *Replica) TryAcquire(uncached, output int) (route.Ticket, bool) {
	c := &r.Counters
	if !incBelow(&c.InFlight, r.MaxConcurrency) {
		return 0, false
	}
	if !incBelow(&c.Pending, r.MaxPending) {
		c.InFlight.Add(-1)
		return 0, false
	}
	c.OutputReserve.Add(int64(output))
	return c.Sent(uncached), true
}

// incBelow increments v if the result stays <= limit (limit 0: no cap).
func incBelow(v *atomic.Int64, limit int) bool {
	if limit <= 0 {
		v.Add(1)
		return true
	}
	for {
		cur := v.Load()
		if cur >= int64(limit) {
			return false
		}
		if v.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// Member returns the replica's gossip member (nil for a static replica).
func (r *Replica) Member() *gossip.Member { return r.member.Load() }

// Healthy reports whether the replica takes traffic at now: it is not
// draining, its probes pass, it is not ejected, and (for a gossip replica)
// its member is alive.
func (r *Replica) Healthy(now time.Time) bool {
	if r.Draining {
		return false
	}
	if m := r.member.Load(); m != nil && m.Status != gossip.StatusAlive {
		return false
	}
	return r.health.probeOK.Load() && !r.health.ejected(now)
}

// State is a replica's health state for metrics and status pages.
type State string

// States.
const (
	StateHealthy   State = "healthy"
	StateEjected   State = "ejected"
	StateUnhealthy State = "unhealthy" // failing active probes
	StateGone      State = "gone"      // gossip member not alive
	StateDraining  State = "draining"  // configured out of routing
)

// States lists every State, for metric labels.
var States = []State{StateHealthy, StateEjected, StateUnhealthy, StateGone, StateDraining}

// State returns the replica's state at now.
func (r *Replica) State(now time.Time) State {
	switch m := r.member.Load(); {
	case r.Draining:
		return StateDraining
	case m != nil && m.Status != gossip.StatusAlive:
		return StateGone
	case r.health.ejected(now):
		return StateEjected
	case !r.health.probeOK.Load():
		return StateUnhealthy
	}
	return StateHealthy
}
