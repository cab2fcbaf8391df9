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
	// BalancerCounts reruns BalancerPolicy with other numbers of balancers
	// (hit rate against number of balancers).
	BalancerCounts []int
	BalancerPolicy string
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
	// OutDir receives one JSON result per run.
	OutDir string
}

// Compare runs every configured run on a fresh, cold fleet with the same
// arrivals (per repetition), writes each result to OutDir and returns them.
// A run that fails is retried once, then logged and skipped; the error lists
// every failure.
func Compare(ctx context.Context, cc CompareConfig, log *slog.Logger) ([]*Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cc.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("results dir: %w", err)
	}
	runs := plans(cc)
	var (
		results []*Result
		errs    []error
	)
	for rep := range max(1, cc.Repetitions) {
		for _, p := range runs {
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
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
				continue
			}
			path := filepath.Join(cc.OutDir, fmt.Sprintf("%s-rep%d.json", fileName(p.label), rep))
			if err := res.WriteFile(path); err != nil {
				errs = append(errs, err)
			}
			results = append(results, res)
		}
	}
	return results, errors.Join(errs...)
}

// plan is one compared run: what it is and its label.
type plan struct {
	info  RunInfo
	label string
}

// oraclePolicy is the policy of the oracle run.
func (cc CompareConfig) oraclePolicy() string {
	if cc.BalancerPolicy != "" {
		return cc.BalancerPolicy
	}
	return "cost_model"
}

// plans lists the runs of one repetition, in order: policies, nginx
// baselines, the oracle, the load sweep, the balancer sweep and the replicas
// sweep. Sweep points equal to the base run are left out (the base run is
// that point), except a replicas point of a policy that has no base run.
func plans(cc CompareConfig) []plan {
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
	for _, f := range cc.LoadFactors {
		if f == 1 {
			continue
		}
		for _, p := range cc.LoadPolicies {
			out = append(out, plan{RunInfo{KindLoad, p, base, f, reps}, fmt.Sprintf("%s@%gx", p, f)})
		}
	}
	for _, b := range cc.BalancerCounts {
		if b == base {
			continue
		}
		out = append(out, plan{RunInfo{KindBalancers, cc.BalancerPolicy, b, 1, reps}, fmt.Sprintf("%s-%db", cc.BalancerPolicy, b)})
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

// compareOne starts a cold fleet, runs the workload once and stops the fleet.
func compareOne(ctx context.Context, cc CompareConfig, info RunInfo, label string, rep int, log *slog.Logger) (*Result, error) {
	fc := cc.Fleet
	fc.Policy = info.Policy
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
	wl := cc.Workload
	wl.Seed += uint64(rep)
	wl.Rate *= info.Load
	res, err := RunWorkload(ctx, bc, wl, log)
	if err != nil {
		return nil, err
	}
	res.Repetition = rep
	res.Run = info
	return res, nil
}
