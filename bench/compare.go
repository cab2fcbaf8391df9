package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/devfleet"
)

// Run kinds, for the report.
const (
	KindPolicy    = "policy"    // a balancer policy at the base load
	KindBaseline  = "baseline"  // nginx in front of the engines
	KindLoad      = "load"      // a policy at a multiple of the base load
	KindBalancers = "balancers" // a policy with another number of balancers
	KindOracle    = "oracle"    // a policy on an exact-state fleet (the oracle router)
	KindReplicas  = "replicas"  // a policy at the base load on another number of replicas
)

// RunInfo says what a compared run was.
type RunInfo struct {
	Kind      string  `json:"kind"`
	Policy    string  `json:"policy"`
	Balancers int     `json:"balancers"`
	Load      float64 `json:"load"`
	// Replicas is the fleet's number of replicas (0 in results written
	// before it was recorded: Result.Config.Replicas says it too).
	Replicas int `json:"replicas,omitempty"`
}

// CompareConfig configures Compare.
type CompareConfig struct {
	// Policies are the balancer policies compared at the base load.
	Policies []string
	// Nginx lists nginx baseline modes (round_robin, least_conn) to run in
	// front of the same engines; empty for none.
	Nginx []string
	// Repetitions repeats everything with new seeds (seed + repetition).
	Repetitions int
	// LoadFactors multiply the workload's rate for LoadPolicies (p99 TTFT
	// against load); 1 is the base run and is not repeated.
	LoadFactors  []float64
	LoadPolicies []string
	// BalancerCounts reruns BalancerPolicies (BalancerPolicy when empty)
	// with other numbers of balancers (hit rate against number of
	// balancers).
	BalancerCounts   []int
	BalancerPolicy   string
	BalancerPolicies []string
	// PeerPolicies are the peers' policies (the baselines of other
	// routers); BestPeer in LoadPolicies or BalancerPolicies stands for the
	// one with the lowest TTFT p99 among their base runs of the first
	// repetition, and is left out when none of them ran.
	PeerPolicies []string
	// Capacity, when it has rates, measures a policy's capacity first and
	// makes it the base load: Workload's rate (a trace's speed-up) is
	// replaced by it, and every result records it.
	Capacity CapacitySearch
	// OracleRun adds one run of BalancerPolicy (cost_model when empty) on a
	// fleet with ExactState: the exact-state oracle the report measures hit
	// rates against.
	OracleRun bool
	// ReplicaCounts reruns ReplicaPolicies at the base load on fleets of
	// these sizes (same cache blocks per replica), for "replicas needed to
	// stay within the SLO"; the base fleet's size is covered by the policy
	// runs when the policy is among Policies.
	ReplicaCounts   []int
	ReplicaPolicies []string
	// Fleet is the fleet every run starts cold from; its Policy and
	// Balancers are set per run.
	Fleet devfleet.Config
	// Bench is the harness template; targets, engine pages and fleet shape
	// are filled in per run.
	Bench Config
	// Workload is the base workload.
	Workload WorkloadConfig
	// OutDir receives one result per run, NAME-repN.json.gz (gzip JSON).
	OutDir string
	// DryRun asks for the plan only (WritePlan); Compare refuses it.
	DryRun bool
}

// Compare runs every configured run on a fresh, cold fleet with the same
// arrivals (per repetition), writes each result to OutDir and returns them.
// A run that fails is retried once, then logged and skipped; the error lists
// every failure.
func Compare(ctx context.Context, cc CompareConfig, log *slog.Logger) ([]*Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cc.DryRun {
		return nil, errors.New("a dry run only plans: use WritePlan")
	}
	if err := os.MkdirAll(cc.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	cc.Fleet = withObjective(cc.Fleet, cc.Bench.SLO)
	var capacity *Capacity
	if len(cc.Capacity.Rates) > 0 {
		c, err := searchCapacity(ctx, cc, log)
		if err != nil {
			return nil, err
		}
		capacity = c
		cc.Workload = cc.Workload.withRate(c.Rate)
		log.Info("bench capacity", "policy", c.Policy, "rate", c.Rate, "unit", c.Unit, "bracketed", c.Bracketed)
	}
	var (
		results []*Result
		errs    []error
	)
	run := func(p plan, rep int) {
		log.Info("bench run", "label", p.label, "repetition", rep)
		res, err := compareOne(ctx, cc, p.info, p.label, rep, log)
		if err != nil && ctx.Err() == nil {
			// A fleet that did not start (a port taken between picking
			// and binding it, say) is retried once on a new cold fleet.
			log.Warn("bench run failed; retrying once", "label", p.label, "err", err)
			res, err = compareOne(ctx, cc, p.info, p.label, rep, log)
		}
		if err != nil {
			log.Error("bench run failed", "label", p.label, "err", err)
			errs = append(errs, fmt.Errorf("%s (repetition %d): %w", p.label, rep, err))
			return
		}
		res.Capacity = capacity
		if err := writeRun(cc.OutDir, fmt.Sprintf("%s-rep%d", fileName(p.label), rep), res); err != nil {
			errs = append(errs, err)
		}
		results = append(results, res)
	}
	// Repetition 0 runs the base runs first: the best peer, which some
	// sweeps run, is chosen from them. Later repetitions run every plan,
	// in reverse order on odd repetitions, so that a machine that slows
	// down (or speeds up) over a part does not favour the runs that come
	// first in every repetition.
	for _, p := range basePlans(cc) {
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		run(p, 0)
	}
	peer := BestPeer(results, cc.PeerPolicies)
	if cc.usesBestPeer() {
		log.Info("bench best peer", "policy", peer)
	}
	for _, p := range sweepPlans(cc, peer) {
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		run(p, 0)
	}
	for rep := 1; rep < cc.Repetitions; rep++ {
		for _, p := range repetitionOrder(plans(cc, peer), rep) {
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			run(p, rep)
		}
	}
	return results, errors.Join(errs...)
}

// plan is one compared run: what it is and its label.
type plan struct {
	info  RunInfo
	label string
}

// TextPrefixSuffix after a policy name in a policy list runs that policy on
// balancers without a tokenizer: they route on the text prefix identity
// (docs/routing.md#text-prefix-identity), e.g. cost_model+text.
const TextPrefixSuffix = "+text"

// SplitPolicy returns the balancer policy a policy list entry names and
// whether it runs without a tokenizer (TextPrefixSuffix).
func SplitPolicy(name string) (policy string, noTokenizer bool) {
	if p, ok := strings.CutSuffix(name, TextPrefixSuffix); ok {
		return p, true
	}
	return name, false
}

// KnownPolicy reports whether name is a policy list entry Compare runs: a
// policy or peer baseline route.Known accepts, optionally with
// TextPrefixSuffix.
func KnownPolicy(name string) bool {
	p, _ := SplitPolicy(name)
	return route.Known(p)
}

// oraclePolicy is the policy of the oracle run.
func (cc CompareConfig) oraclePolicy() string {
	if cc.BalancerPolicy != "" {
		return cc.BalancerPolicy
	}
	return "cost_model"
}

// BestPeerToken in CompareConfig.LoadPolicies or BalancerPolicies stands
// for the best of PeerPolicies (see BestPeer).
const BestPeerToken = "best_peer"

// BestPeer returns the peer policy whose base run (first repetition) has
// the lowest TTFT p99, a higher goodput breaking ties; "" when none of
// peers has one.
func BestPeer(results []*Result, peers []string) string {
	var best *Result
	for _, r := range results {
		if r.Repetition != 0 || r.Run.Kind != KindPolicy || !slices.Contains(peers, r.Run.Policy) {
			continue
		}
		s := r.Summary
		if best == nil || s.TTFT.P99 < best.Summary.TTFT.P99 ||
			s.TTFT.P99 == best.Summary.TTFT.P99 && s.Goodput > best.Summary.Goodput {
			best = r
		}
	}
	if best == nil {
		return ""
	}
	return best.Run.Policy
}

func (cc CompareConfig) usesBestPeer() bool {
	return slices.Contains(cc.LoadPolicies, BestPeerToken) || slices.Contains(cc.BalancerPolicies, BestPeerToken)
}

// resolvePeer replaces BestPeerToken by peer (dropping it when peer is ""
// or already listed).
func resolvePeer(policies []string, peer string) []string {
	var out []string
	for _, p := range policies {
		if p == BestPeerToken {
			p = peer
		}
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (cc CompareConfig) balancerPolicies() []string {
	if len(cc.BalancerPolicies) > 0 {
		return cc.BalancerPolicies
	}
	if cc.BalancerPolicy != "" {
		return []string{cc.BalancerPolicy}
	}
	return nil
}

// plans lists the runs of one repetition, in order: policies, nginx
// baselines, the oracle, the load sweep, the balancer sweep and the replicas
// sweep, with peer standing for BestPeerToken. Sweep points equal to the
// base run are left out (the base run is that point), except a replicas
// point of a policy that has no base run.
func plans(cc CompareConfig, peer string) []plan {
	return append(basePlans(cc), sweepPlans(cc, peer)...)
}

// repetitionOrder returns ps in the order repetition rep runs them: as
// listed on even repetitions, reversed on odd ones.
func repetitionOrder(ps []plan, rep int) []plan {
	if rep%2 == 0 {
		return ps
	}
	out := slices.Clone(ps)
	slices.Reverse(out)
	return out
}

// basePlans lists the runs at the base load: policies, nginx baselines and
// the oracle.
func basePlans(cc CompareConfig) []plan {
	var out []plan
	base, reps := cc.Fleet.Balancers, cc.Fleet.Replicas
	for _, p := range cc.Policies {
		out = append(out, plan{RunInfo{KindPolicy, p, base, 1, reps}, p})
	}
	for _, m := range cc.Nginx {
		out = append(out, plan{RunInfo{KindBaseline, "nginx-" + m, 0, 1, reps}, "nginx-" + m})
	}
	if cc.OracleRun {
		p := cc.oraclePolicy()
		out = append(out, plan{RunInfo{KindOracle, p, base, 1, reps}, p + "-oracle"})
	}
	return out
}

// sweepPlans lists the load, balancer and replicas sweeps.
func sweepPlans(cc CompareConfig, peer string) []plan {
	var out []plan
	base, reps := cc.Fleet.Balancers, cc.Fleet.Replicas
	for _, f := range cc.LoadFactors {
		if f == 1 {
			continue
		}
		for _, p := range resolvePeer(cc.LoadPolicies, peer) {
			out = append(out, plan{RunInfo{KindLoad, p, base, f, reps}, fmt.Sprintf("%s@%gx", p, f)})
		}
	}
	for _, b := range cc.BalancerCounts {
		if b == base {
			continue
		}
		for _, p := range resolvePeer(cc.balancerPolicies(), peer) {
			out = append(out, plan{RunInfo{KindBalancers, p, b, 1, reps}, fmt.Sprintf("%s-%db", p, b)})
		}
	}
	for _, p := range cc.ReplicaPolicies {
		for _, n := range cc.ReplicaCounts {
			if n == reps && slices.Contains(cc.Policies, p) {
				continue
			}
			out = append(out, plan{RunInfo{KindReplicas, p, base, 1, n}, fmt.Sprintf("%s-%dr", p, n)})
		}
	}
	return out
}

func fileName(label string) string {
	return strings.NewReplacer("@", "_at_", "/", "_", " ", "_").Replace(label)
}

// writeRun writes the run res into dir as name.json.gz (gzip: a part's
// results are rewritten whenever it is rerun, and plain JSON made them
// large) and removes a plain name.json of an earlier run, which the report
// would otherwise refuse as the same run twice.
func writeRun(dir, name string, res *Result) error {
	if err := res.WriteFile(filepath.Join(dir, name+GzipSuffix)); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, name+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the earlier plain result: %w", err)
	}
	return nil
}

// compareOne starts a cold fleet, runs the workload once and stops the fleet.
func compareOne(ctx context.Context, cc CompareConfig, info RunInfo, label string, rep int, log *slog.Logger) (*Result, error) {
	fc := cc.Fleet
	fc.Policy, fc.NoTokenizer = SplitPolicy(info.Policy)
	fc.Balancers = info.Balancers
	if info.Replicas > 0 {
		fc.Replicas = info.Replicas
	}
	fc.ExactState = info.Kind == KindOracle
	if info.Kind == KindBaseline {
		fc.Policy = "round_robin" // unused: no balancer runs
	}
	f, err := devfleet.Start(ctx, fc, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := f.Stop(); err != nil {
			log.Warn("stop fleet", "err", err)
		}
	}()
	bc := cc.Bench
	bc.Label = label
	bc.EngineMetrics = f.EngineMetricsURLs()
	bc.Replicas = len(f.Replicas)
	bc.BlockSize = fc.BlockSize
	if fc.CacheBlocks > 0 {
		bc.CacheBlocks = fc.CacheBlocks
	}
	bc.Targets = nil
	for _, b := range f.Balancers {
		bc.Targets = append(bc.Targets, b.URL)
	}
	if info.Kind == KindBaseline {
		engines := make([]string, len(f.Replicas))
		for i, r := range f.Replicas {
			engines[i] = r.EngineURL
		}
		dir, err := os.MkdirTemp("", "inferrail-nginx-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		n, err := StartNginx(ctx, dir, strings.TrimPrefix(info.Policy, "nginx-"), engines)
		if err != nil {
			return nil, err
		}
		defer n.Stop()
		bc.Targets = []string{n.URL}
	}
	wl := cc.Workload.AtLoad(info.Load)
	wl.Seed += uint64(rep)
	res, err := RunWorkload(ctx, bc, wl, log)
	if err != nil {
		return nil, err
	}
	res.Repetition = rep
	res.Run = info
	if cc.Fleet.Routing != nil && info.Kind != KindBaseline {
		fc := cc.Fleet
		fc.Policy, _ = SplitPolicy(info.Policy)
		if res.Routing, err = devfleet.RoutingKeys(fc.RouteConfig()); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// withObjective returns fc with its routing told the objective the runs are
// judged by (route.SLOConfig, which cost_model's TPOT guard keeps), as a
// user states theirs in the balancer's config; a routing config that states
// one (--routing) keeps its own.
func withObjective(fc devfleet.Config, slo SLO) devfleet.Config {
	if fc.Routing != nil && fc.Routing.SLO != (route.SLOConfig{}) {
		return fc
	}
	rc := route.DefaultConfig()
	if fc.Routing != nil {
		rc = *fc.Routing
	}
	rc.SLO = route.SLOConfig{TTFT: slo.TTFT, TPOT: slo.TPOT}
	fc.Routing = &rc
	return fc
}
