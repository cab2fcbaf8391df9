package bench

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// Inter-arrival times of the seeded Poisson generator have mean and standard
// deviation 1/rate (exponential), and counts per second have variance equal
// to their mean.
func TestPoissonStatistics(t *testing.T) {
	for _, rate := range []float64{0.5, 8, 200} {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			const n = 20000
			at := PoissonArrivals(rng, rate, 0, n)
			if len(at) != n {
				t.Fatalf("got %d arrivals, want %d", len(at), n)
			}
			var sum, sq float64
			prev := time.Duration(0)
			for _, a := range at {
				if a < prev {
					t.Fatalf("arrivals not sorted: %v after %v", a, prev)
				}
				g := (a - prev).Seconds()
				sum += g
				sq += g * g
				prev = a
			}
			mean := sum / n
			sd := math.Sqrt(sq/n - mean*mean)
			// The sample mean's standard error is (1/rate)/sqrt(n) ≈ 0.7 %;
			// allow 4 %.
			if rel := math.Abs(mean*rate - 1); rel > 0.04 {
				t.Errorf("rate %v seed %d: mean gap %v, want %v", rate, seed, mean, 1/rate)
			}
			if rel := math.Abs(sd*rate - 1); rel > 0.06 {
				t.Errorf("rate %v seed %d: gap sd %v, want %v", rate, seed, sd, 1/rate)
			}
			// Counts per unit window: index of dispersion ≈ 1.
			win := 1 / rate * 20
			counts := map[int]float64{}
			for _, a := range at {
				counts[int(a.Seconds()/win)]++
			}
			var cs, cq float64
			k := float64(int(prev.Seconds() / win))
			for i := 0; i < int(k); i++ {
				cs += counts[i]
				cq += counts[i] * counts[i]
			}
			cm := cs / k
			if d := (cq/k - cm*cm) / cm; d < 0.8 || d > 1.2 {
				t.Errorf("rate %v seed %d: index of dispersion %v, want ≈ 1", rate, seed, d)
			}
		}
	}
}

func TestPoissonWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	at := PoissonArrivals(rng, 10, 30*time.Second, 0)
	if len(at) < 240 || len(at) > 360 {
		t.Errorf("got %d arrivals in 30 s at 10/s", len(at))
	}
	if at[len(at)-1] >= 30*time.Second {
		t.Errorf("arrival %v past the window", at[len(at)-1])
	}
}

// Words are one builtin:sim token each, so n words are n tokens.
func TestWordsAreOneTokenEach(t *testing.T) {
	for _, n := range []int{1, 16, 511, 512, 2000} {
		ids := simtok.Encode(words(textKey("t", uint64(n)), n), false)
		if len(ids) != n {
			t.Errorf("%d words gave %d tokens", n, len(ids))
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	for _, name := range []string{W1, W2, W3, W6, Ladder} {
		c := DefaultWorkload(name)
		c.Duration = 20 * time.Second
		a, err := Generate(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := Generate(c)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s: same seed, different sessions:\n%s", name, diff)
		}
		c.Seed++
		d, _ := Generate(c)
		if len(a) > 0 && len(d) > 0 && a[0].Turns[0].User == d[0].Turns[0].User {
			t.Errorf("%s: a new seed must give new text", name)
		}
		for i, s := range a {
			if len(s.Turns) != c.Turns {
				t.Errorf("%s session %d: %d turns, want %d", name, i, len(s.Turns), c.Turns)
			}
			if i > 0 && s.Start < a[i-1].Start {
				t.Errorf("%s: sessions out of order", name)
			}
		}
	}
}

// W1 sessions of one group share their system prompt exactly; W6 sessions
// share nothing.
func TestGenerateSharing(t *testing.T) {
	c := DefaultWorkload(W1)
	c.Duration = 30 * time.Second
	ss, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	bySys := map[int]string{}
	groups := map[int]bool{}
	for _, s := range ss {
		groups[s.Group] = true
		if prev, ok := bySys[s.Group]; ok && prev != s.System {
			t.Fatalf("group %d has two system prompts", s.Group)
		}
		bySys[s.Group] = s.System
		if n := len(simtok.Encode(s.System, false)); n != c.SystemTokens {
			t.Fatalf("system prompt of %d tokens, want %d", n, c.SystemTokens)
		}
	}
	if len(groups) < c.Groups/2 {
		t.Errorf("only %d of %d groups used", len(groups), c.Groups)
	}
	w6 := DefaultWorkload(W6)
	w6.Duration = 10 * time.Second
	ss, _ = Generate(w6)
	first := map[string]bool{}
	for _, s := range ss {
		p := s.Turns[0].User[:48]
		if first[p] {
			t.Fatalf("W6 prompts share a 16-token prefix")
		}
		first[p] = true
	}
}

func TestWorkloadValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*WorkloadConfig)
		want string
	}{
		{"ok", func(*WorkloadConfig) {}, ""},
		{"unknown", func(c *WorkloadConfig) { c.Name = "W9" }, "workload.name"},
		{"rate", func(c *WorkloadConfig) { c.Rate = 0 }, "workload.rate"},
		{"unbounded", func(c *WorkloadConfig) { c.Duration, c.MaxSessions = 0, 0 }, "duration or workload.max_sessions"},
		{"trace", func(c *WorkloadConfig) { c.Name, c.TracePath = Mooncake, "" }, "trace_path"},
		{"ladder questions", func(c *WorkloadConfig) { c.Name, c.PromptsPerGroup = Ladder, 0 }, "prompts_per_group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultWorkload(W1)
			tt.edit(&c)
			err := c.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// A trace's hash ids expand so that equal ids give equal 16-token engine
// blocks (32 per id) and a different id gives a different block from there on.
func TestExpandTraceSharesBlocks(t *testing.T) {
	a := TraceRecord{InputLength: 1200, HashIDs: []int64{0, 1, 2}}
	b := TraceRecord{InputLength: 1100, HashIDs: []int64{0, 1, 7}}
	ta, tb := simtok.Encode(ExpandTrace(a, 0, 0), false), simtok.Encode(ExpandTrace(b, 1, 0), false)
	if len(ta) != 1200 || len(tb) != 1100 {
		t.Fatalf("token counts %d, %d; want 1200, 1100", len(ta), len(tb))
	}
	seed := kvblock.NewSeed("m", "", "")
	ha, hb := kvblock.Hashes(nil, seed, ta, 16), kvblock.Hashes(nil, seed, tb, 16)
	for i := range 64 {
		if ha[i] != hb[i] {
			t.Fatalf("block %d differs; the first two hash ids are shared", i)
		}
	}
	if ha[64] == hb[64] {
		t.Fatal("block 64 is shared; hash ids 2 and 7 differ")
	}
	if got := len(simtok.Encode(ExpandTrace(a, 0, 700), false)); got != 700 {
		t.Errorf("truncated prompt of %d tokens, want 700", got)
	}
}

func TestParseTrace(t *testing.T) {
	in := `{"timestamp": 3000, "input_length": 600, "output_length": 5, "hash_ids": [0, 2]}

{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]}
`
	got, err := ParseTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceRecord{{Timestamp: 0, InputLength: 6758, OutputLength: 500, HashIDs: []int64{0, 1}},
		{Timestamp: 3000, InputLength: 600, OutputLength: 5, HashIDs: []int64{0, 2}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseTrace mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`[1]`, `{"timestamp": -1}`, `{"input_length": 10, "hash_ids": [1, 2]}`, `{"timestamp": 1} {}`, `{"timestamp": "x"}`} {
		if _, err := ParseTrace(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseTrace(%q) accepted", bad)
		}
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}`))
	f.Add([]byte("{\"timestamp\": 5}\n\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ParseTrace(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for i, r := range recs {
			if r.Timestamp < 0 || r.InputLength < 0 || len(r.HashIDs) > (r.InputLength+511)/512 {
				t.Fatalf("invalid record accepted: %+v", r)
			}
			if i > 0 && recs[i-1].Timestamp > r.Timestamp {
				t.Fatal("records not sorted")
			}
			if n := len(simtok.Encode(ExpandTrace(r, i, 2048), false)); n != min(r.InputLength, 2048) {
				t.Fatalf("expanded %d tokens for %d", n, r.InputLength)
			}
		}
	})
}

// A trace's arrivals are its timestamps after the start offset, divided by
// the speed-up: with ExactTimes exactly, without it each up to a second
// later (before the speed-up), by a seeded jitter.
func TestTraceSessionsTimes(t *testing.T) {
	recs := []TraceRecord{{Timestamp: 500, InputLength: 16}, {Timestamp: 2000, InputLength: 16},
		{Timestamp: 2001, InputLength: 16}, {Timestamp: 7000, InputLength: 16}}
	c := DefaultWorkload(Mooncake)
	c.Speedup, c.TraceStart, c.Duration = 2, time.Second, time.Hour
	c.ExactTimes = true
	want := []time.Duration{500 * time.Millisecond, 500*time.Millisecond + 500*time.Microsecond, 3 * time.Second}
	exact := TraceSessions(recs, c)
	if len(exact) != len(want) {
		t.Fatalf("%d sessions, want %d (the record before the start offset skipped)", len(exact), len(want))
	}
	for i, s := range exact {
		if s.Start != want[i] {
			t.Errorf("exact session %d starts at %v, want %v", i, s.Start, want[i])
		}
	}
	c.ExactTimes = false
	// Records a second or more apart, so the jitter cannot reorder them.
	recs = []TraceRecord{{Timestamp: 2000, InputLength: 16}, {Timestamp: 4000, InputLength: 16}, {Timestamp: 7000, InputLength: 16}}
	want = []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}
	moved := 0
	for i, s := range TraceSessions(recs, c) {
		if s.Start < want[i] || s.Start >= want[i]+500*time.Millisecond {
			t.Errorf("jittered session %d starts at %v, want within [%v, %v)", i, s.Start, want[i], want[i]+500*time.Millisecond)
		}
		if s.Start != want[i] {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no jittered arrival moved")
	}
}

// The committed trace parses and replays with its shared first block.
func TestCommittedTrace(t *testing.T) {
	c := DefaultWorkload(Mooncake)
	c.TracePath = "traces/mooncake_conversation_trace.jsonl"
	c.Duration, c.Speedup, c.MaxInputTokens = 30*time.Second, 2, 2048
	ss, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) < 50 {
		t.Fatalf("only %d sessions in the first 60 s of the trace", len(ss))
	}
	for _, s := range ss {
		if s.Group != 0 || s.Start >= c.Duration {
			t.Fatalf("session %+v: every conversation request starts with hash id 0, within the window", s.ID)
		}
	}
}

// The ladder workload sends llm-d's shared-prefix prompts: each of the
// Groups × PromptsPerGroup prompts once per cycle of the shuffled order,
// every prompt a fixed system prompt of its group plus a fixed question,
// so the questions of a group share the system prompt and a prompt's next
// cycle repeats it exactly.
func TestLadderSessions(t *testing.T) {
	c := DefaultWorkload(Ladder)
	c.Groups, c.PromptsPerGroup, c.SystemTokens, c.UserTokens = 4, 3, 64, 16
	c.Rate, c.Duration, c.MaxSessions = 100, time.Hour, 36
	ss, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 36 {
		t.Fatalf("got %d sessions, want 36", len(ss))
	}
	n := c.Groups * c.PromptsPerGroup
	sys := map[int]string{}
	for i, s := range ss {
		if len(s.Turns) != 1 || s.Turns[0].MaxTokens != c.OutputTokens {
			t.Fatalf("session %d: %d turns of %d tokens, want one of %d", i, len(s.Turns), s.Turns[0].MaxTokens, c.OutputTokens)
		}
		if got := len(simtok.Encode(s.System, false)); got != c.SystemTokens {
			t.Fatalf("session %d: system prompt of %d tokens, want %d", i, got, c.SystemTokens)
		}
		if got := len(simtok.Encode(s.Turns[0].User, false)); got != c.UserTokens {
			t.Fatalf("session %d: question of %d tokens, want %d", i, got, c.UserTokens)
		}
		if prev, ok := sys[s.Group]; ok && prev != s.System {
			t.Fatalf("group %d has two system prompts", s.Group)
		}
		sys[s.Group] = s.System
		if i >= n {
			p := ss[i-n]
			if p.System != s.System || p.Turns[0].User != s.Turns[0].User {
				t.Fatalf("session %d does not repeat session %d of the previous cycle", i, i-n)
			}
		}
	}
	first := map[string]bool{}
	perGroup := map[int]int{}
	for _, s := range ss[:n] {
		first[s.System+"|"+s.Turns[0].User] = true
		perGroup[s.Group]++
	}
	if len(first) != n {
		t.Errorf("the first cycle has %d distinct prompts, want %d", len(first), n)
	}
	for g := range c.Groups {
		if perGroup[g] != c.PromptsPerGroup {
			t.Errorf("group %d has %d prompts in a cycle, want %d", g, perGroup[g], c.PromptsPerGroup)
		}
	}
	inOrder := true
	for i, s := range ss[:n] {
		inOrder = inOrder && s.Group == i/c.PromptsPerGroup
	}
	if inOrder {
		t.Error("the cycle is not shuffled")
	}
}
