package render

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/inferrail/inferrail/bench"
)

// The matrix: a cell is one workload part (a results directory: W1, the
// ladder, the trace on H100-sized caches, ...) at one load multiple of its
// base load (1× being round robin's measured capacity when the part ran a
// capacity search). A cell holds each policy's run at that load with the
// fleet's own number of balancers; the balancer sweep (runs with more
// balancers, at 1×) is kept beside the 1× cell.

// Policy names the matrix goals know.
var (
	// cacheBlind are the cache-blind policies (and the nginx baselines).
	cacheBlind = []string{"round_robin", "random", "least_request", "p2c", "nginx-round_robin", "nginx-least_conn"}
	// peerPolicies are the peers' published policies, re-implemented as
	// baselines (they may be absent from older results).
	peerPolicies = []string{"sglang_cache_aware", "dynamo_kv", "llm_d"}
	// goalRivals are the policies cost_model's p99 and goodput are held
	// against in every cell.
	goalRivals = []string{"round_robin", "least_request", "p2c", "sglang_cache_aware", "dynamo_kv", "llm_d"}
	// sharingWorkloads are the workloads whose prompts share prefixes.
	sharingWorkloads = []string{bench.W1, bench.W2, bench.W3, bench.Ladder, bench.Mooncake}
)

// ownPolicy is the policy the matrix goals are about.
const ownPolicy = "cost_model"

// cell is one (part, load) of the matrix.
type cell struct {
	part, workload string
	load           float64
	// runs are the policies' runs (one balancer set-up: the fleet's own),
	// by policy, nginx baselines included.
	runs map[string]*Group
	// order lists runs' policies in report order.
	order []string
	// multi are the balancer sweep's runs at this load, by policy and
	// number of balancers (only the 1× cell has them).
	multi map[string]map[int]*Group
	// oracle is the exact-state oracle run (1× only).
	oracle *Group
	// replicas is the fleet size.
	replicas int
}

func (c *cell) name() string { return fmt.Sprintf("%s %g×", c.part, c.load) }

// run returns the policy's run (nil when absent).
func (c *cell) run(policy string) *Group { return c.runs[policy] }

// partName is a set's part: its directory, or its workload for sets built
// without one.
func (s Set) partName() string { return cmp.Or(s.Part, s.Workload) }

// cellsOf lists the matrix's cells, by part (in set order) and load.
func cellsOf(sets []Set) []*cell {
	var out []*cell
	for _, s := range sets {
		byLoad := map[float64]*cell{}
		get := func(load float64, g *Group) *cell {
			c, ok := byLoad[load]
			if !ok {
				c = &cell{part: s.partName(), workload: s.Workload, load: load, runs: map[string]*Group{},
					multi: map[string]map[int]*Group{}, replicas: g.replicas()}
				byLoad[load] = c
			}
			return c
		}
		for _, g := range s.Groups {
			load := g.Run.Load
			if load == 0 {
				load = 1
			}
			switch g.Run.Kind {
			case bench.KindPolicy, bench.KindBaseline, bench.KindLoad, "":
				c := get(load, g)
				if _, dup := c.runs[g.Run.Policy]; !dup {
					c.runs[g.Run.Policy] = g
					c.order = append(c.order, g.Run.Policy)
				}
			case bench.KindOracle:
				get(load, g).oracle = g
			case bench.KindBalancers:
				c := get(load, g)
				if c.multi[g.Run.Policy] == nil {
					c.multi[g.Run.Policy] = map[int]*Group{}
				}
				c.multi[g.Run.Policy][g.Run.Balancers] = g
			}
		}
		var loads []float64
		for l := range byLoad {
			loads = append(loads, l)
		}
		slices.Sort(loads)
		for _, l := range loads {
			out = append(out, byLoad[l])
		}
	}
	return out
}

// best returns the run among policies (those present in c) with the
// lowest value of f; nil when none is present.
func (c *cell) best(policies []string, f func(*Group) float64) *Group {
	var best *Group
	for _, p := range policies {
		if g := c.run(p); g != nil && (best == nil || f(g) < f(best)) {
			best = g
		}
	}
	return best
}

// present lists which of policies have a run in c.
func (c *cell) present(policies []string) (have, missing []string) {
	for _, p := range policies {
		if c.run(p) != nil {
			have = append(have, p)
		} else {
			missing = append(missing, p)
		}
	}
	return have, missing
}

// balancerPolicies lists the policies with runs on the fleet's own
// balancers (KindPolicy or KindLoad), not the nginx baselines.
func (c *cell) policies() []string {
	var out []string
	for _, p := range c.order {
		if g := c.runs[p]; g.Run.Kind != bench.KindBaseline {
			out = append(out, p)
		}
	}
	return out
}

// goodput is the mean over repetitions of a group's goodput per second.
func (g *Group) goodput() float64 {
	return g.mean(func(r *bench.Result) float64 { return r.Summary.Goodput })
}

func negGoodput(g *Group) float64 { return -g.goodput() }
