package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// FleetStartBudget is the time budgeted per run for starting and stopping
// its cold fleet: 4 simulators, their sidecars and the balancers were ready
// 1 to 8 s (mean 3.4 s) after a run began in a niced validation run of 8
// runs on the shared 2-core development machine, and a run took about 11 s in
// all with a 5 s window (85 s for the 8).
const FleetStartBudget = 5 * time.Second

// Budget bounds the wall time of a comparison: every run lasts at most its
// arrival window (which holds the warm-up), then its drain bound, plus
// FleetStartBudget.
type Budget struct {
	// CapacityRuns and Runs count the capacity search's runs (all of its
	// rates, which it may stop short of, and the confirmation of one rate
	// on every other repetition's arrivals; each rate stepped down to adds
	// as many) and the matrix's runs over every repetition.
	CapacityRuns, Runs int
	// CapacityRun and Run bound one run of each.
	CapacityRun, Run time.Duration
	// Total is CapacityRuns × CapacityRun + Runs × Run.
	Total time.Duration
}

// PlanBudget computes the budget of cc.
func PlanBudget(cc CompareConfig) Budget {
	b := Budget{
		CapacityRuns: capacityRuns(cc),
		Runs:         max(1, cc.Repetitions) * len(plans(cc, BestPeerToken)),
		Run:          cc.Workload.Duration + cc.Bench.Drain + FleetStartBudget,
	}
	b.CapacityRun = cmpOr(cc.Capacity.Duration, cc.Workload.Duration) + cmpOr(cc.Capacity.Drain, cc.Bench.Drain) + FleetStartBudget
	b.Total = time.Duration(b.CapacityRuns)*b.CapacityRun + time.Duration(b.Runs)*b.Run
	return b
}

// capacityRuns counts the search's runs when its first confirmation holds:
// every rate once, and one rate again on every other repetition's arrivals.
func capacityRuns(cc CompareConfig) int {
	n := len(capacityPlans(cc))
	if n == 0 {
		return 0
	}
	return n + max(0, cc.Repetitions-1)
}

func cmpOr(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}

// WritePlan prints what Compare would run for cc, without running it: the
// capacity search's rates and its confirmation on the other repetitions'
// arrivals, then one line per run of a repetition (best_peer
// standing for the best peer policy, chosen after the first repetition's
// base runs), then the budget.
func WritePlan(w io.Writer, cc CompareConfig) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tkind\tpolicy\tload\tbalancers\treplicas\t")
	cps := capacityPlans(cc)
	for _, p := range cps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g %s\t%d\t%d\t\n", p.label, p.info.Kind, p.info.Policy, p.info.Load, cc.Workload.unit(), p.info.Balancers, p.info.Replicas)
	}
	if len(cps) > 0 {
		for rep := 1; rep < cc.Repetitions; rep++ {
			p := cps[0]
			fmt.Fprintf(tw, "%s-capacity@confirmed-rep%d\t%s\t%s\tthe highest rate within\t%d\t%d\t\n", p.info.Policy, rep, p.info.Kind, p.info.Policy, p.info.Balancers, p.info.Replicas)
		}
	}
	for _, p := range plans(cc, BestPeerToken) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%gx\t%d\t%d\t\n", p.label, p.info.Kind, p.info.Policy, p.info.Load, p.info.Balancers, p.info.Replicas)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b := PlanBudget(cc)
	_, err := fmt.Fprintf(w, "budget: %d capacity runs × %v + %d runs (%d repetitions) × %v = %v (%.0f minutes) at most\n",
		b.CapacityRuns, b.CapacityRun, b.Runs, max(1, cc.Repetitions), b.Run, b.Total, b.Total.Minutes())
	return err
}
