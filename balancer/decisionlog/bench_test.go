package decisionlog

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchRecord is a cost_model decision over 8 candidates, the shape
// BenchmarkDecisionLog (package balancer) records.
func benchRecord() *Record {
	f := func(v float64) *float64 { return &v }
	r := &Record{Seq: 123456, Time: time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC),
		RequestID: "754fea66877bb82209724e3ab42a5f0b", Model: "meta-llama/Llama-3.1-8B-Instruct", Policy: "cost_model",
		Mode: "proxy", Attempt: 1, PromptTokens: 612, PromptBlocks: 38, CachedTokens: 592, Winner: "replica-3",
		Reason: "lowest_ttft", Score: f(0.0246097464), EstimatedTTFTMS: f(17.304873), DecisionUS: 24.225}
	for i := range 8 {
		cached := 592 * (i % 2)
		r.Candidates = append(r.Candidates, Candidate{ID: fmt.Sprintf("replica-%d", i), State: "healthy",
			InFlight: i, Pending: i / 2, PrefillTokens: int64(i * 300), KVUsage: f(0.1 * float64(i)), CachedTokens: &cached,
			Score: f(0.0255776 + float64(i)/1e4), EstimatedTTFTMS: f(17.78881 + float64(i)), QueueWaitMS: f(float64(i) / 3)})
	}
	return r
}

// BenchmarkEncode is the writer's cost per decision: AppendJSON (what the
// writer does) against encoding/json (what it did first).
func BenchmarkEncode(b *testing.B) {
	r := benchRecord()
	b.Run("append_json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = r.AppendJSON(buf[:0])
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			out, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.SetBytes(int64(n))
	})
}
