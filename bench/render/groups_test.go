package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferrail/inferrail/bench"
)

func TestCountPlacement(t *testing.T) {
	rec := func(session int, replica string, at time.Duration, warmup bool) bench.Record {
		return bench.Record{Session: session, Replica: replica, Scheduled: at, Status: 200, Warmup: warmup,
			PromptTokens: 100, CachedTokens: int(at) * 10}
	}
	groups := []int{0, 0, 1, 0, 1, 1}
	records := []bench.Record{ // out of order: counted in scheduled order
		rec(3, "a", 4, false), // group 0, home (a)
		rec(0, "a", 1, false), // group 0, first
		rec(1, "b", 2, true),  // group 0, away but in the warm-up: not counted, b now home too
		rec(2, "a", 3, false), // group 1, first
		rec(4, "b", 5, false), // group 1, away
		rec(5, "c", 6, false), // group 1, away
	}
	// A failed request is not counted.
	records = append(records, bench.Record{Session: 1, Replica: "c", Scheduled: 7, Status: 503})
	// Session 3 alone went where its group had gone.
	want := placementCount{away: 2, homePrompt: 100, homeCached: 40}
	if c, ok := countPlacement(records, groups); !ok || c != want {
		t.Errorf("countPlacement = %+v, %v; want %+v, true", c, ok, want)
	}
	records[0].Replica = ""
	if _, ok := countPlacement(records, groups); ok {
		t.Error("countPlacement with a record naming no replica: ok, want not")
	}
}

// The losing table names the requests sent away from their group's replicas
// and what those sent to them found cached when a policy's hit rate is
// lower, on workloads of single-turn prompts in groups, and nothing of it
// elsewhere.
func TestDiagnoseNamesRequestsAwayFromTheirGroup(t *testing.T) {
	w := bench.WorkloadConfig{Name: bench.W1, Seed: 3, Rate: 40, Duration: 2 * time.Second, Groups: 4,
		SystemTokens: 32, UserTokens: 8, OutputTokens: 4, Turns: 1}
	sessions, err := bench.Generate(w)
	if err != nil {
		t.Fatal(err)
	}
	run := func(label string, hit float64, replica func(s bench.Session) int) *Group {
		r := &bench.Result{Workload: w, Summary: bench.Summary{HitRateUsage: hit}}
		for _, s := range sessions {
			r.Records = append(r.Records, bench.Record{Session: s.ID, Scheduled: s.Start, Status: 200,
				Replica: fmt.Sprintf("replica-%d", replica(s)), PromptTokens: 40, CachedTokens: int(40 * hit)})
		}
		return &Group{Label: label, Run: bench.RunInfo{Policy: label}, Reps: []*bench.Result{r}}
	}
	byGroup := run("sglang_cache_aware", 0.9, func(s bench.Session) int { return s.Group })
	byTurn := run("cost_model", 0.5, func(s bench.Session) int { return s.ID % 4 })
	p, ok := groupPlacement(byTurn)
	if !ok || p.away < 10 {
		t.Fatalf("groupPlacement = %+v, %v over %d sessions; want many away", p, ok, len(sessions))
	}
	if q, _ := groupPlacement(byGroup); q.away != 0 || q.homeShare != 0.9 {
		t.Errorf("one replica per group: groupPlacement = %+v, want none away, 90%% cached", q)
	}
	d := diagnose(byTurn, byGroup, 4)
	for _, text := range []string{
		fmt.Sprintf("%.1f requests a run went to a replica none of their group's earlier requests had gone to (sglang_cache_aware 0.0)", p.away),
		"requests sent where their group had gone found 50% of their prompt tokens cached (sglang_cache_aware 90%): the rest evicted there or not yet computed",
	} {
		if !strings.Contains(d, text) {
			t.Errorf("diagnose() = %q, want %q in it", d, text)
		}
	}
	// A multi-turn workload's groups are not its prefixes: nothing said.
	w2 := bench.DefaultWorkload(bench.W2)
	w2.Duration = 2 * time.Second
	for _, g := range []*Group{byTurn, byGroup} {
		g.Reps[0].Workload = w2
	}
	if d := diagnose(byTurn, byGroup, 4); strings.Contains(d, "earlier requests had gone to") {
		t.Errorf("W2: diagnose() = %q, want no group placement in it", d)
	}
}
