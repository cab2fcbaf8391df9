package decisionlog

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// FuzzAppendJSON checks that AppendJSON writes what encoding/json writes for
// any strings and numbers: the same bytes, which decode to the same record.
func FuzzAppendJSON(f *testing.F) {
	f.Add("req-1", "replica-0", "healthy", 3, int64(120), 0.5, 17.3, true)
	f.Add("a\"b\\c<d>&e\u2028", "\xff\xfe", "\x00\n\t", -1, int64(-5), 1e-9, 1e22, false)
	f.Add("", "", "", 0, int64(0), 0.0, -0.0, false)
	f.Fuzz(func(t *testing.T, id, replica, state string, n int, tokens int64, x, y float64, flag bool) {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
			return // encoding/json refuses them; AppendJSON writes null
		}
		r := Record{Seq: uint64(n) * 7, Time: time.Unix(int64(n), int64(n)*13).UTC(), RequestID: id, Model: replica,
			Policy: state, Mode: id, Attempt: n, PromptTokens: n, PromptBlocks: -n, CachedTokens: n * 16,
			Winner: replica, Reason: state, SummaryFallback: flag, DecisionUS: y, Turn: state,
			Candidates: []Candidate{{ID: replica, State: state, Excluded: flag, InFlight: n, Pending: -n, PrefillTokens: tokens, StepTokens: tokens / 2}}}
		if flag {
			r.Score, r.EstimatedTTFTMS = &x, &y
			c := &r.Candidates[0]
			c.KVUsage, c.CachedTokens, c.Score, c.EstimatedTTFTMS, c.QueueWaitMS, c.MemoryWaitMS, c.KVShort = &x, &n, &y, &x, &y, &x, true
			c.StepAgeMS = &y
			c.Answers, c.LoadStale = n, true
		}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.AppendJSON(nil)
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("AppendJSON differs from encoding/json (-want +got):\n%s", diff)
		}
	})
}
