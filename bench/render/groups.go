package render

import (
	"cmp"
	"encoding/json"
	"slices"
	"sync"

	"github.com/inferrail/inferrail/bench"
)

// placement is how a run's requests went relative to their shared-prefix
// group's earlier requests: away, the measured requests sent to a replica
// none of their group's earlier requests in the run went to when some had
// gone somewhere (the hits a policy gave up by placement); homeShare, the
// share of the prompt tokens cached of those sent to a replica an earlier
// one went to (what memory kept of the group there).
type placement struct {
	away      float64
	homeShare float64
}

// groupPlacement is placement, the mean over repetitions (homeShare over
// their tokens together). ok is false unless every repetition's workload is
// of single-turn prompts in shared-prefix groups (W1, the ladder), whose
// group the workload's configuration decides (bench.Generate), and every
// record names its replica.
func groupPlacement(g *Group) (p placement, ok bool) {
	if len(g.Reps) == 0 {
		return p, false
	}
	var away, prompt, cached int
	for _, r := range g.Reps {
		groups, ok := sessionGroups(r.Workload)
		if !ok {
			return p, false
		}
		c, ok := countPlacement(r.Records, groups)
		if !ok {
			return p, false
		}
		away += c.away
		prompt += c.homePrompt
		cached += c.homeCached
	}
	p.away = float64(away) / float64(len(g.Reps))
	if prompt > 0 {
		p.homeShare = float64(cached) / float64(prompt)
	}
	return p, true
}

// placementCount is one run's counts for groupPlacement.
type placementCount struct {
	away                   int
	homePrompt, homeCached int
}

// countPlacement counts one run's records in their scheduled order (warm-up
// requests count as earlier requests but are not counted; failed ones
// neither).
func countPlacement(records []bench.Record, groups []int) (placementCount, bool) {
	var c placementCount
	order := make([]*bench.Record, 0, len(records))
	for i := range records {
		rec := &records[i]
		if !rec.OK() {
			continue
		}
		if rec.Replica == "" || rec.Session < 0 || rec.Session >= len(groups) {
			return c, false
		}
		order = append(order, rec)
	}
	slices.SortStableFunc(order, func(a, b *bench.Record) int { return cmp.Compare(a.Scheduled, b.Scheduled) })
	seen := map[int]map[string]bool{}
	for _, rec := range order {
		g := groups[rec.Session]
		at := seen[g]
		switch {
		case at == nil:
			at = map[string]bool{}
			seen[g] = at
		case rec.Warmup:
		case at[rec.Replica]:
			c.homePrompt += rec.PromptTokens
			c.homeCached += rec.CachedTokens
		default:
			c.away++
		}
		at[rec.Replica] = true
	}
	return c, true
}

// groupsMemo holds sessionGroups' answers by workload configuration: every
// policy of a part replays the same workloads.
var groupsMemo sync.Map // JSON of bench.WorkloadConfig -> []int (nil: none)

// sessionGroups returns each session's shared-prefix group for a workload of
// single-turn prompts in groups; ok false for any other workload (several
// turns, no groups, a trace) or one that does not generate.
func sessionGroups(c bench.WorkloadConfig) ([]int, bool) {
	if c.Name == bench.Mooncake || c.Turns > 1 || c.Groups <= 0 {
		return nil, false
	}
	key, err := json.Marshal(c)
	if err != nil {
		return nil, false
	}
	if v, ok := groupsMemo.Load(string(key)); ok {
		gs := v.([]int)
		return gs, gs != nil
	}
	var gs []int
	if sessions, err := bench.Generate(c); err == nil {
		gs = make([]int, len(sessions))
		for i, s := range sessions {
			gs[i] = s.Group
			if s.Group < 0 || len(s.Turns) != 1 {
				gs = nil
				break
			}
		}
	}
	groupsMemo.Store(string(key), gs)
	return gs, gs != nil
}
