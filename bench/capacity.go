package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// KindCapacity marks a run of the capacity search (not written as a result:
// its figures are in Result.Capacity).
const KindCapacity = "capacity"

// CapacityGoodShare is the share of requests within the SLO (TTFT and
// TPOT) a rate needs, besides p99 TTFT within the SLO's TTFT, to count as
// within the capacity.
const CapacityGoodShare = 0.99

// CapacitySearch configures the measurement of a policy's capacity before
// the matrix: the policy at each of Rates in turn with short windows, on the
// first repetition's arrivals, until one rate is beyond the SLO (p99 TTFT
// above the SLO's TTFT or fewer than CapacityGoodShare of requests within
// the SLO). The highest rate within is then confirmed on the arrivals of
// every other repetition of the matrix; where one of them is beyond, the
// next lower rate is confirmed in turn. The capacity is the highest rate
// within on every repetition's arrivals: the load the matrix runs at 1×,
// where each of its repetitions runs, so one lucky run does not make it.
// For a trace (whose timestamps are fixed) a rate is a speed-up factor.
type CapacitySearch struct {
	// Policy is the policy measured (round_robin when empty).
	Policy string
	// Rates are tried in ascending order (empty: no search).
	Rates []float64
	// Duration, Warmup and Drain replace the workload's arrival window and
	// the harness's warm-up and drain for the search's runs (0: keep).
	Duration, Warmup, Drain time.Duration
}

func (s CapacitySearch) policy() string {
	if s.Policy != "" {
		return s.Policy
	}
	return "round_robin"
}

// Capacity is a measured capacity, recorded in every result of the matrix
// it set the 1× load of.
type Capacity struct {
	// Policy is the measured policy.
	Policy string `json:"policy"`
	// Unit is what a rate is: "sessions/s", or "speed-up" for a trace.
	Unit string `json:"unit"`
	// Rate is the capacity: the 1× load of the matrix.
	Rate float64 `json:"rate"`
	// Bracketed says a tried rate was beyond the capacity; false means the
	// policy stayed within the SLO at every tried rate and the capacity is
	// at least Rate.
	Bracketed bool `json:"bracketed"`
	// Exceeded says the policy was beyond the SLO already at the lowest
	// tried rate, which is then Rate: the capacity is below it.
	Exceeded bool `json:"exceeded,omitempty"`
	// Window is the arrival window of each search run.
	Window time.Duration `json:"window_ns"`
	// Points are the tried rates, in order.
	Points []CapacityPoint `json:"points"`
}

// CapacityPoint is one run of the search.
type CapacityPoint struct {
	Rate float64 `json:"rate"`
	// Repetition is whose arrivals (seed + repetition) the run replayed:
	// 0 for the ascending search, others for a confirmation.
	Repetition int     `json:"repetition,omitempty"`
	Requests   int     `json:"requests"`
	Failed     int     `json:"failed"`
	P50        float64 `json:"ttft_p50_ms"`
	P99        float64 `json:"ttft_p99_ms"`
	Good       float64 `json:"good_fraction"`
	Within     bool    `json:"within"`
}

// WithinSLO applies the capacity rule to a run's summary.
func WithinSLO(s Summary, slo SLO) bool {
	return s.Requests > 0 && s.TTFT.P99 <= ms(slo.TTFT) && s.GoodFraction >= CapacityGoodShare
}

// NewCapacityPoint summarises one search run.
func NewCapacityPoint(rate float64, s Summary, slo SLO) CapacityPoint {
	return CapacityPoint{Rate: rate, Requests: s.Requests, Failed: s.Failed, P50: s.TTFT.P50, P99: s.TTFT.P99,
		Good: s.GoodFraction, Within: WithinSLO(s, slo)}
}

// capacityFrom returns the capacity the points measure (in the order
// tried): the highest rate within on every point at it, below the lowest
// rate with a point beyond. exceeded is true when the lowest rate tried is
// beyond already; rate is then that lowest rate (0 without points).
func capacityFrom(points []CapacityPoint) (rate float64, bracketed, exceeded bool) {
	rates := make([]float64, 0, len(points))
	beyond := map[float64]bool{}
	for _, p := range points {
		if !slices.Contains(rates, p.Rate) {
			rates = append(rates, p.Rate)
		}
		beyond[p.Rate] = beyond[p.Rate] || !p.Within
	}
	slices.Sort(rates)
	for i, r := range rates {
		if beyond[r] {
			if i == 0 {
				return r, true, true
			}
			return rate, true, false
		}
		rate = r
	}
	return rate, false, false
}

// unit names what a rate of the workload is.
func (c WorkloadConfig) unit() string {
	if c.Name == Mooncake {
		return "speed-up"
	}
	return "sessions/s"
}

// AtLoad returns the workload at f times its load: the arrival rate times
// f, or for a trace (fixed timestamps) the speed-up times f.
func (c WorkloadConfig) AtLoad(f float64) WorkloadConfig {
	if c.Name == Mooncake {
		c.Speedup *= f
	} else {
		c.Rate *= f
	}
	return c
}

// withRate returns the workload at the given rate (a speed-up for a trace).
func (c WorkloadConfig) withRate(rate float64) WorkloadConfig {
	if c.Name == Mooncake {
		c.Speedup = rate
	} else {
		c.Rate = rate
	}
	return c
}

// capacityPlans lists the search's runs, in order.
func capacityPlans(cc CompareConfig) []plan {
	rates := slices.Clone(cc.Capacity.Rates)
	slices.Sort(rates)
	rates = slices.Compact(rates)
	var out []plan
	for _, r := range rates {
		p := cc.Capacity.policy()
		out = append(out, plan{RunInfo{KindCapacity, p, cc.Fleet.Balancers, r, cc.Fleet.Replicas}, fmt.Sprintf("%s-capacity@%g", p, r)})
	}
	return out
}

// searchCapacity runs the capacity search (Load of each plan is the rate
// itself) and returns the capacity. When the policy is beyond the SLO at
// the lowest rate already, on any repetition's arrivals, that rate is the
// capacity, marked Exceeded: an unattended matrix still runs, at the lowest
// load tried.
func searchCapacity(ctx context.Context, cc CompareConfig, log *slog.Logger) (*Capacity, error) {
	sc := cc
	if s := cc.Capacity; s.Duration > 0 {
		sc.Workload.Duration = s.Duration
	}
	if s := cc.Capacity; s.Warmup > 0 {
		sc.Bench.Warmup = s.Warmup
	}
	if s := cc.Capacity; s.Drain > 0 {
		sc.Bench.Drain = s.Drain
	}
	c := &Capacity{Policy: cc.Capacity.policy(), Unit: cc.Workload.unit(), Window: sc.Workload.Duration}
	measure := func(p plan, rep int) (CapacityPoint, error) {
		rc := sc
		rc.Workload = sc.Workload.withRate(p.info.Load)
		info := p.info
		info.Load = 1
		label := p.label
		if rep > 0 {
			label = fmt.Sprintf("%s-rep%d", p.label, rep)
		}
		log.Info("bench capacity run", "label", label, "rate", p.info.Load, "unit", c.Unit, "repetition", rep)
		res, err := compareOne(ctx, rc, info, label, rep, log)
		if err != nil && ctx.Err() == nil {
			log.Warn("bench capacity run failed; retrying once", "label", label, "err", err)
			res, err = compareOne(ctx, rc, info, label, rep, log)
		}
		if err != nil {
			return CapacityPoint{}, fmt.Errorf("capacity search: %s: %w", label, err)
		}
		pt := NewCapacityPoint(p.info.Load, res.Summary, cc.Bench.SLO)
		pt.Repetition = rep
		c.Points = append(c.Points, pt)
		log.Info("bench capacity point", "rate", pt.Rate, "repetition", rep, "p99_ms", pt.P99, "good", pt.Good, "within", pt.Within)
		return pt, nil
	}
	if err := climb(ctx, capacityPlans(cc), cc.Repetitions, measure); err != nil {
		return nil, err
	}
	if len(c.Points) == 0 {
		return nil, fmt.Errorf("capacity search: no rates to try")
	}
	c.Rate, c.Bracketed, c.Exceeded = capacityFrom(c.Points)
	if c.Exceeded {
		log.Warn("bench capacity: beyond the SLO already at the lowest rate; running the matrix there", "policy", c.Policy,
			"rate", c.Rate, "unit", c.Unit)
	}
	return c, nil
}

// climb runs the search's order: the plans (ascending rates) on the first
// repetition's arrivals until one is beyond, then the highest rate within
// on every other repetition's (of reps), stepping down a rate while one of
// them is beyond.
func climb(ctx context.Context, plans []plan, reps int, measure func(plan, int) (CapacityPoint, error)) error {
	within := 0 // plans[:within] were within on the first repetition
	for _, p := range plans {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		pt, err := measure(p, 0)
		if err != nil {
			return err
		}
		if !pt.Within {
			break
		}
		within++
	}
confirm:
	for i := within - 1; i >= 0; i-- {
		for rep := 1; rep < reps; rep++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			pt, err := measure(plans[i], rep)
			if err != nil {
				return err
			}
			if !pt.Within {
				continue confirm
			}
		}
		return nil
	}
	return nil
}
