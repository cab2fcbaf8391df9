package route

import (
	"time"

	"math"
	"testing"
)

// A replica whose load report lapsed is not where the KV bound sends what it
// turns away from full replicas: with every other replica's KV full, cost
// model spreads by work instead of sending every request to the one it knows
// nothing about (W6 at 1.5x: 150 requests in a row to one replica).
func TestCostModelLapsedReportDoesNotDrawTheOverflow(t *testing.T) {
	cs := cands(4)
	withCapacity(cs, 1<<20) // this balancer's own requests never fill one
	for i := range cs {
		cs[i].Load.KVUsage = 1
	}
	cs[3].Load.Stale = true
	p := newPolicy(t, PolicyCostModel, nil)
	n := make([]int, len(cs))
	for i := range 100 {
		got, _ := mustPick(t, p, req(prompt(uint32(5000+i), uint32(5000+i), 0, 64)), cs)
		lease(cs[got].Own, 64*16)
		n[got]++
	}
	if n[3] > 40 {
		t.Errorf("the replica whose report lapsed got %d of 100 requests (per replica %v), want a share near a quarter", n[3], n)
	}
}

// A replica short of KV memory is charged the estimated wait for it, which
// depends on what holds the memory. Three replicas are full and one has
// room behind queued 1,024-token prefills. When many short requests hold the
// memory (W6: 62 in flight with 64-token answers), one ends every step or
// two and frees its blocks, so waiting for memory beats a queue of 21: the
// request goes to a full replica. When a few long requests hold it (4 in
// flight of 16,000 tokens with 256 still to write each), the first ends
// after about 64 steps: the request goes to the replica with room and 4
// queued (kv_spill). Before the estimate the bound skipped every short
// replica in both cases.
func TestCostModelWaitsForMemory(t *testing.T) {
	setup := func(inFlight int, perReserve int64, queued int) []Candidate {
		cs := cands(4)
		withCapacity(cs, 4096) // 65,536 tokens of 16
		for i := range 3 {
			cs[i].Own.InFlight.Add(int64(inFlight))
			cs[i].Own.OutputReserve.Add(int64(inFlight) * perReserve)
			cs[i].Load.KVUsage = 0.999
		}
		cs[3].Load.KVUsage = 0.5
		for range queued {
			lease(cs[3].Own, 1024)
		}
		cs[3].Own.InFlight.Add(int64(40 - queued))
		cs[3].Own.OutputReserve.Add(40 * perReserve)
		return cs
	}
	p := newPolicy(t, PolicyCostModel, nil)
	r := req(prompt(7000, 7000, 0, 64))
	r.OutputTokens = 64
	got, d := mustPick(t, p, r, setup(62, 64, 21))
	if got == 3 {
		t.Errorf("many short requests holding the memory: picked the replica with 21 queued prefills (%q, TTFTs %v), want a full one", d.Reason, d.TTFTs)
	}
	if d.MemoryWaits[got] <= 0 || d.MemoryWaits[got] >= d.TTFTs[got] || d.MemoryWaits[3] != 0 {
		t.Errorf("memory waits %v (TTFTs %v): want one for the full replica picked, within its TTFT, and none for the one with room", d.MemoryWaits, d.TTFTs)
	}
	r = req(prompt(7001, 7001, 0, 64))
	got, d = mustPick(t, p, r, setup(4, 256, 4))
	if got != 3 || d.Reason != ReasonKVSpill {
		t.Errorf("a few long requests holding the memory: picked %d (%q, TTFTs %v), want 3 (kv_spill)", got, d.Reason, d.TTFTs)
	}
}

// Under overload every replica is short of memory and has queued prefills
// that need more of it than all its requests in flight free. The one with
// the longest queue is charged the longest wait for memory, not none: with
// none (its wait was +Inf beyond what all in flight free, and a replica
// without an estimate was charged nothing) it drew every request, W6 at
// 135/s sent runs of up to 91 to one replica. The scores alone (no
// rotation) never pick it; with the default rotation, whose margin takes
// in its score, it gets no more than its turn.
func TestCostModelOverloadChargesTheLongestQueueForMemory(t *testing.T) {
	cs := cands(4)
	withCapacity(cs, 4096) // 65,536 tokens of 16
	for i := range cs {
		cs[i].Load.KVUsage = 0.95
		cs[i].Own.InFlight.Add(40) // decoding, 64 tokens still to write each
		cs[i].Own.OutputReserve.Add(40 * 64)
		queued := 50
		if i == 3 {
			queued = 70
		}
		for range queued {
			lease(cs[i].Own, 1024)
			cs[i].Own.OutputReserve.Add(64)
		}
	}
	r := req(prompt(7100, 7100, 0, 64))
	r.OutputTokens = 64
	rotating := newPolicy(t, PolicyCostModel, nil)
	turns := 0
	for i := range 8 {
		ri := req(prompt(uint32(7200+i), uint32(7200+i), 0, 64))
		ri.OutputTokens = 64
		if got, _ := mustPick(t, rotating, ri, cs); got == 3 {
			turns++
		}
	}
	if turns > 2 {
		t.Errorf("the replica with the longest queue got %d of 8 picks, more than its turn", turns)
	}
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.SpreadMargin = 0 })
	got, d := mustPick(t, p, r, cs)
	if got == 3 {
		t.Errorf("picked the replica with the longest queue (%q, TTFTs %v, memory waits %v)", d.Reason, d.TTFTs, d.MemoryWaits)
	}
	if d.MemoryWaits[3] <= d.MemoryWaits[0] {
		t.Errorf("memory waits %v: want the longest queue's the longest", d.MemoryWaits)
	}
	// Every replica short, one of them without an estimate (nothing of
	// its own in flight): it is charged the longest estimated wait.
	cs = cands(2)
	withCapacity(cs, 4096)
	cs[0].Load.KVUsage, cs[1].Load.KVUsage = 0.999, 0.999
	cs[0].Own.InFlight.Add(62)
	cs[0].Own.OutputReserve.Add(62 * 64)
	_, d = mustPick(t, p, r, cs)
	if d.MemoryWaits[0] <= 0 || d.MemoryWaits[1] != MemoryShort || d.TTFTs[1] < d.MemoryWaits[0] {
		t.Errorf("memory waits %v, TTFTs %v: want the unestimated replica charged at least the estimated wait", d.MemoryWaits, d.TTFTs)
	}
}

// Near-full replicas short of memory by a block (by the bound: every
// request writing its whole reserve while none ends) and others with a block
// to spare are near-equal for a cold prompt: the rotation takes them in turn.
// Charged its own prefill again for a preemption, the short one scored a
// whole prefill worse and every pick went to the others (W6 at 1x: runs of up
// to 54 requests to the replica whose report showed room, docs/routing.md).
func TestCostModelRotatesOverABlockShort(t *testing.T) {
	const capacity, inFlight, out = 4096 * 16, 60, 64
	cs := cands(4)
	withCapacity(cs, 4096)
	added := 1024 + (inFlight+1)*out // the prompt and every reserve
	for i := range cs {
		cs[i].Own.InFlight.Add(inFlight)
		cs[i].Own.OutputReserve.Add(inFlight * out)
		used := capacity - added - 16 // fits by a block
		if i%2 == 1 {
			used += 32 // short by a block
		}
		cs[i].Load.KVUsage = float64(used) / capacity
	}
	p := newPolicy(t, PolicyCostModel, nil)
	n := make([]int, len(cs))
	for i := range 8 {
		r := req(prompt(uint32(7300+i), uint32(7300+i), 0, 64))
		r.OutputTokens = out
		got, d := mustPick(t, p, r, cs)
		if i == 0 && (d.MemoryWaits[1] <= 0 || d.MemoryWaits[0] != 0) {
			t.Fatalf("memory waits %v: want the odd replicas short, the even ones not", d.MemoryWaits)
		}
		n[got]++
	}
	for i, k := range n {
		if k != 2 {
			t.Errorf("picks per replica %v: want 2 each (replica %d got %d)", n, i, k)
			break
		}
	}
}

// kvWait: k = ⌈deficit / (used/n + R̄)⌉ requests must end, at n/R̄ a step:
// k·R̄/n steps, beyond n too (those admitted as the first ones end free
// theirs in turn); no estimate without a fresh report or with nothing in
// flight.
func TestKVWait(t *testing.T) {
	p := newPolicy(t, PolicyCostModel, nil).(*costModel)
	w := Work{InFlight: 10, OutputReserve: 10 * 100}
	step := p.est.step(10, 10) // ten decodes
	for _, tc := range []struct {
		name  string
		room  kvRoom
		w     Work
		steps float64 // -1: +Inf
	}{
		{"fits", kvRoom{state: kvFits, used: 1000}, w, 0},
		{"one must end", kvRoom{state: kvShort, deficit: 100, used: 10000}, w, 100.0 / 10},
		{"two must end", kvRoom{state: kvShort, deficit: 1101, used: 10000}, w, 2 * 100.0 / 10},
		{"all must end", kvRoom{state: kvShort, deficit: 11000, used: 10000}, w, 100},
		{"more than all", kvRoom{state: kvShort, deficit: 11001, used: 10000}, w, 11 * 100.0 / 10},
		{"no report", kvRoom{state: kvShort, deficit: 100}, w, -1},
		{"nothing in flight", kvRoom{state: kvShort, deficit: 100, used: 10000}, Work{}, -1},
	} {
		got := p.kvWait(tc.room, tc.w, nil, 0, NewScratch(0))
		want := tc.steps * step
		if tc.steps < 0 {
			want = math.Inf(1)
		}
		if math.Abs(got-want) > 1e-6*max(want, 1) && !(math.IsInf(got, 1) && math.IsInf(want, 1)) {
			t.Errorf("%s: kvWait = %v ns, want %v (%v steps of %v)", tc.name, got, want, tc.steps, step)
		}
	}
}

// kvFit counts the KV blocks in use, the prefill still queued, the
// request's own uncached tokens and the reserve for the output still to be
// written (Work.OutputReserve for the requests in flight there, and
// min(max_tokens, E) for the request, E = expected_output_tokens) against
// the capacity, in the replica's block size, and says by how much it is
// short.
func TestKVShort(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Cost.ExpectedOutputTokens = 200
	b := &base{cfg: cfg}
	c := cands(1)[0]
	c.CapacityBlocks, c.BlockSize, c.Load.KVUsage = 1000, 32, 0.5 // 16,000 of 32,000 tokens in use
	for _, tc := range []struct {
		name string
		w    Work
		need int
		out  int
		want bool
	}{
		{"room for prompt and output", Work{}, 15800, 0, false},
		{"the output does not fit", Work{}, 15801, 0, true},
		{"max_tokens lowers the request's reserve", Work{}, 15900, 100, false},
		{"max_tokens above E does not raise it", Work{}, 15801, 5000, true},
		{"queued prefill counts", Work{InFlight: 1, Pending: 1, PrefillTokens: 8000, OutputReserve: 200}, 7600, 0, false},
		{"queued prefill and its output count", Work{InFlight: 1, Pending: 1, PrefillTokens: 8000, OutputReserve: 200}, 7601, 0, true},
		{"the decodes' reserve counts", Work{InFlight: 10, OutputReserve: 2000}, 13800, 0, false},
		{"the decodes' reserve counts, full", Work{InFlight: 10, OutputReserve: 2000}, 13801, 0, true},
		{"short max_tokens in flight keep less", Work{InFlight: 10, OutputReserve: 500}, 15300, 0, false},
	} {
		room := b.kvFit(&c, tc.w, t0, tc.need, tc.out, 16)
		if got := room.state == kvShort; got != tc.want {
			t.Errorf("%s: kvFit(%+v, need %d, out %d) short = %v, want %v", tc.name, tc.w, tc.need, tc.out, got, tc.want)
		}
		if tc.want && room.deficit != 1 {
			t.Errorf("%s: deficit %v tokens, want 1", tc.name, room.deficit)
		}
		if room.used != 16000 {
			t.Errorf("%s: used %v tokens, want 16000", tc.name, room.used)
		}
	}
	if got := b.kvFit(&c, Work{}, t0, 100, 0, 16).state; got != kvFits {
		t.Errorf("kvFit with a fresh report and room = %v, want kvFits", got)
	}
	b.cfg.Cost.ExpectedOutputTokens = 0 // no reserve: prompts only
	if b.kvFit(&c, Work{InFlight: 10}, t0, 16000, 0, 16).state == kvShort {
		t.Error("kvFit without a reserve counted output")
	}
	b.cfg.Cost.ExpectedOutputTokens = 200
	// Without a fresh report the usage is unknown: this balancer's own work
	// is a floor (short when it alone overflows), else unknown, never room.
	c.Load.Stale = true
	if got := b.kvFit(&c, Work{}, t0, 20000, 0, 16).state; got != kvUnknown {
		t.Errorf("kvFit with a stale report and room for own work = %v, want kvUnknown", got)
	}
	if got := b.kvFit(&c, Work{InFlight: 20, Pending: 20, PrefillTokens: 20000, OutputReserve: 4000}, t0, 8000, 0, 16).state; got != kvShort {
		t.Errorf("kvFit with a stale report and own work over the capacity = %v, want kvShort", got)
	}
	c.Load.Stale = false
	c.CapacityBlocks = 0
	if got := b.kvFit(&c, Work{}, t0, 1<<30, 0, 16).state; got != kvUnknown {
		t.Errorf("kvFit with an unknown capacity = %v, want kvUnknown", got)
	}
}

// A new conversation holds nothing of its own anywhere, and its later turns
// come back to where it starts: from the replica holding its shared prefix
// but with its KV memory far fuller than another's, it starts on the other
// (at most HotPrefixQueueWait slower by the estimate). Fuller by the memory
// in use or by the memory holding contexts (Load.HeldBlocks): running
// requests alike, a replica whose memory is full of cached contexts is no
// home beside one that holds nothing (W3 at 4/s: one replica got no
// conversation for a whole run, docs/bench-findings.md). A later turn, a replica not
// far roomier, or blocks held unknown keep it with the prefix.
func TestCostModelStartsAConversationWhereMemoryIsFree(t *testing.T) {
	hs := prompt(21, 21, 128, 152) // 2,432 tokens, a 2,048-token system prompt held by replica 0
	const capacity = 4096
	setup := func(usage0, others float64, held0, heldOthers int64) []Candidate {
		cs := cands(4)
		withCapacity(cs, capacity)
		cs[0].Prefix = fakeIndex{}.add(hs[:128])
		for i := range cs {
			cs[i].Load.KVUsage, cs[i].Load.HeldBlocks = others, heldOthers
		}
		cs[0].Load.KVUsage, cs[0].Load.HeldBlocks = usage0, held0
		return cs
	}
	for _, tc := range []struct {
		name              string
		opens             bool
		usage0, others    float64
		held0, heldOthers int64
		moves             bool
	}{
		{"a new conversation, far roomier replicas", true, 0.6, 0.05, 0, 0, true},
		{"a later turn stays with its context", false, 0.6, 0.05, 0, 0, false},
		{"not twice the free share", true, 0.6, 0.3, 0, 0, false},
		{"twice, but not a quarter more", true, 0.9, 0.75, 0, 0, false},
		{"all near empty", true, 0.2, 0, 0, 0, false},
		{"as busy, but the others hold nothing", true, 0.3, 0.3, capacity, 0, true},
		{"as busy, the others hold half as much", true, 0.3, 0.3, capacity, capacity / 2, true},
		{"as busy, all full of contexts", true, 0.3, 0.3, capacity, capacity, false},
		{"as busy, the others hold nothing, a later turn", false, 0.3, 0.3, capacity, 0, false},
		{"as busy, blocks held unknown there", true, 0.3, 0.3, -1, 0, false},
		{"as busy, blocks held unknown elsewhere", true, 0.3, 0.3, capacity, -1, false},
	} {
		r := req(hs)
		r.Turn = TurnLater
		if tc.opens {
			r.Turn = TurnFirst
		}
		p := newPolicy(t, PolicyCostModel, nil) // a fresh overlay: the placement is this case's
		got, d := mustPick(t, p, r, setup(tc.usage0, tc.others, tc.held0, tc.heldOthers))
		if moved := got != 0; moved != tc.moves || moved != (d.Reason == ReasonHotPrefix) {
			t.Errorf("%s: picked %d (%q), want a move %v", tc.name, got, d.Reason, tc.moves)
		}
	}
}

// Only later turns pay for starting a conversation on a roomier replica, so
// the move may cost at most HotPrefixQueueWait times the share of the
// model's conversations that go on: where the policy has seen 30 first turns
// and no later one (single requests, as the Mooncake trace sends them) a
// first turn stays with the replica holding its shared prefix, where a move
// costs it that prefix's prefill (2,048 tokens, about 60 ms); as later turns
// come it moves again. Neither explain's dry runs nor a retry's second
// attempt are counted.
func TestCostModelMovesNewConversationsOnlyWhereTheyGoOn(t *testing.T) {
	hs := prompt(21, 21, 128, 152) // 2,432 tokens, a 2,048-token system prompt held by replica 0
	const capacity = 4096
	cs := cands(4)
	withCapacity(cs, capacity)
	cs[0].Prefix = fakeIndex{}.add(hs[:128])
	for i := range cs {
		cs[i].Load.KVUsage = 0.3
	}
	cs[0].Load.HeldBlocks = capacity // the others hold nothing
	p := newPolicy(t, PolicyCostModel, nil)
	moves := func() bool {
		r := req(hs)
		r.Turn, r.DryRun = TurnFirst, true
		got, d := mustPick(t, p, r, cs)
		return got != 0 && d.Reason == ReasonHotPrefix
	}
	count := func(turn Turn, n int, retry bool) {
		for i := range n {
			r := req(prompt(100+uint32(i), 100+uint32(i), 0, 8)) // another prompt: only its turn matters
			r.Turn = turn
			if retry {
				r.Exclude = []int{0}
			}
			mustPick(t, p, r, cs)
		}
	}
	if !moves() {
		t.Fatal("a fresh policy: want the first turn moved to a roomier replica")
	}
	count(TurnFirst, 30, false)
	count(TurnLater, 60, true) // retries: not counted
	for range 60 {
		moves() // dry runs: not counted
	}
	if moves() {
		t.Error("after 30 first turns and no later one: want the first turn kept with its prefix")
	}
	count(TurnLater, 30, false)
	if !moves() {
		t.Error("after 30 first and 30 later turns: want the first turn moved again")
	}
}

// releaseSteps: each request in flight frees its share of the memory in use
// and its output reserve when it ends: spread over the steps its reserve
// takes to write where its progress is not seen (the mean's k·R̄/n), by a
// followed answer's bound for certain, and at it as often as answers run to
// their bound (ran).
func TestReleaseSteps(t *testing.T) {
	repeat := func(bound float64, n int) []answerEnd {
		out := make([]answerEnd, n)
		for i := range out {
			out[i] = answerEnd{bound: bound, reserve: 64}
		}
		return out
	}
	half := append(repeat(64, 20), repeat(4, 20)...)
	for _, tc := range []struct {
		name    string
		deficit float64
		used    float64 // each request's share of the memory in use
		n       int
		reserve float64
		ends    []answerEnd
		ran     float64
		want    float64
	}{
		{"none followed", 10*1064 - 1, 1000, 40, 40 * 64, nil, 0, 10 * 64.0 / 40},
		{"all followed, just begun", 10*1064 - 1, 1000, 40, 40 * 64, repeat(64, 40), 0, 10 * 64.0 / 40},
		{"half near their bounds", 10*1064 - 1, 1000, 40, 40 * 64, half, 0, 4},
		{"more than those near their bounds", 25 * 1064, 1000, 40, 40 * 64, half, 0, 4 + (25*1064-22610)/(20*1064/64.0)},
		{"more than those near their bounds, all running to them", 25 * 1064, 1000, 40, 40 * 64, half, 1, 64},
		{"some followed, running to their bounds", 1, 1000, 40, 40 * 64, repeat(4, 10), 1, 1064 / (30 * 1064 / 64.0)},
		{"bound past the reserve, running to it", 100, 1000, 1, 256, []answerEnd{{1000, 256}}, 1, 1000},
		{"bound past the reserve, ending early", 100, 1000, 1, 256, []answerEnd{{1000, 256}}, 0, 256},
		{"ended answers free at once", 2300, 1000, 4, 4 * 128,
			[]answerEnd{{128, 128}, {0, 128}, {128, 128}, {0, 128}}, 0, (3*1128 - 2*1128) / (2 * 1128 / 128.0)},
		{"more than all", 3000, 1000, 2, 20, []answerEnd{{10, 10}, {10, 10}}, 0, 3 * 10.0 / 2},
		{"freed at once", 100, 1000, 3, 30, []answerEnd{{0, 10}, {10, 10}, {0, 10}}, 0, 0},
	} {
		got, _ := releaseSteps(tc.deficit, tc.used, tc.n, tc.reserve, tc.ends, tc.ran, nil)
		if math.Abs(got-tc.want) > 1e-9*max(tc.want, 1) {
			t.Errorf("%s: releaseSteps = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A replica whose answers are near their max_tokens frees its memory sooner
// than one whose answers have just begun, where answers run to their bound
// (as benchmarks' do, and clients' that bound their answers tightly): with
// both full and as many requests in flight, the request goes to the first,
// charged a fraction of the other's wait. The answers' progress reaches the
// estimate through when each frees its memory (Counters.appendEnds,
// releaseSteps); the shortfall counts every reserve whole, so both replicas
// are short by as much. Without it the two looked the same (W2 at round
// robin's capacity: the replica that freed the least in the next half
// second took the slowest requests, docs/routing-findings.md).
func TestCostModelCountsAnswersNearTheirEnds(t *testing.T) {
	cs := cands(2)
	withCapacity(cs, 4096)
	for i, written := range []int{120, 8} {
		c := cs[i].Own
		cs[i].Load.KVUsage = 0.999
		for range 30 { // answers that ran to their bound, and ended
			a := c.Follow(128, 128)
			a.Tokens(t0, 128)
			c.Unfollow(a)
		}
		for range 40 {
			c.InFlight.Add(1)
			c.OutputReserve.Add(128)
			c.Follow(128, 128).Tokens(t0, written)
		}
	}
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.SpreadMargin = 0 })
	r := req(prompt(7400, 7400, 0, 64))
	r.OutputTokens = 128
	got, d := mustPick(t, p, r, cs)
	if got != 0 || d.MemoryWaits[0] <= 0 || 4*d.MemoryWaits[0] >= d.MemoryWaits[1] {
		t.Errorf("picked %d, memory waits %v: want 0, the replica whose answers are near their ends, with a wait under a quarter of the other's", got, d.MemoryWaits)
	}
}

// fakePeerAnswers is a replica's peers' answers as a fleet would give them.
type fakePeerAnswers []PeerAnswer

func (f fakePeerAnswers) AppendPeerAnswers(dst []PeerAnswer, _ time.Time) []PeerAnswer {
	return append(dst, f...)
}

// The wait for memory counts the other balancers' answers as its own: a
// replica whose peers' answers are near their ends frees its memory sooner.
// A started answer's bound is aged by the steps since its message arrived
// (no message goes out for a single token), and an answer without a reserve
// is skipped.
func TestCostModelCountsPeersAnswers(t *testing.T) {
	short := func(answers ...[]PeerAnswer) []Candidate {
		cs := cands(len(answers))
		withCapacity(cs, 4096)
		for i, as := range answers {
			cs[i].Load = Load{Known: true, Exact: true, HasPeers: true,
				Peers:       Work{InFlight: len(as), OutputReserve: int64(128 * len(as))},
				PeerAnswers: fakePeerAnswers(as)}
			cs[i].Load.KVUsage = 0.999
		}
		return cs
	}
	answers := func(n, left int, started bool, at time.Time, reserve int) []PeerAnswer {
		as := make([]PeerAnswer, n)
		for i := range as {
			as[i] = PeerAnswer{Left: left, Started: started, Reserve: reserve, At: at}
		}
		return as
	}
	p := newPolicy(t, PolicyCostModel, func(c *Config) { c.SpreadMargin = 0 })
	r := req(prompt(7400, 7400, 0, 64))
	r.OutputTokens = 128

	t.Run("as sent", func(t *testing.T) {
		got, d := mustPick(t, p, r, short(answers(40, 120, true, t0, 128), answers(40, 8, true, t0, 128)))
		if got != 1 || d.MemoryWaits[1] <= 0 || 2*d.MemoryWaits[1] >= d.MemoryWaits[0] {
			t.Errorf("picked %d, memory waits %v: want 1, whose peers' answers are near their ends, with a wait under half the other's", got, d.MemoryWaits)
		}
	})
	t.Run("aged", func(t *testing.T) {
		// r1's answers were sent 10 s ago with 120 tokens left: they have
		// ended by now, while r0's, sent now with 100 left, have not.
		got, d := mustPick(t, p, r, short(answers(40, 100, true, t0, 128), answers(40, 120, true, t0.Add(-10*time.Second), 128)))
		if got != 1 || d.MemoryWaits[1] >= d.MemoryWaits[0] {
			t.Errorf("picked %d, memory waits %v: want 1, whose peers' answers have aged to their ends", got, d.MemoryWaits)
		}
	})
	t.Run("without a reserve", func(t *testing.T) {
		as := answers(40, 8, true, t0, 128)
		as[3].Reserve = 0
		if _, d := mustPick(t, p, r, short(answers(40, 120, true, t0, 128), as)); d.MemoryWaits[1] < 0 {
			t.Errorf("memory waits %v", d.MemoryWaits)
		}
	})
}
