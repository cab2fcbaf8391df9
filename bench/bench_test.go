package bench

import (
	"os"
	"testing"

	"github.com/inferrail/inferrail/internal/kvblock"
	"github.com/inferrail/inferrail/internal/tokenize/simtok"
)

// tracePrompts turns the committed trace's hash ids into 16-token-block
// prompts directly (32 sub-blocks per 512-token id), as the engines would see
// them after expansion.
func tracePrompts(b *testing.B, n int) []Prompt {
	f, err := os.Open("traces/mooncake_conversation_trace.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	recs, err := ParseTrace(f)
	if err != nil {
		b.Fatal(err)
	}
	recs = recs[:min(n, len(recs))]
	out := make([]Prompt, len(recs))
	for i, r := range recs {
		p := Prompt{Tokens: r.InputLength}
		full := r.InputLength / 16
		for j := 0; j < full; j++ {
			id := r.HashIDs[min(j/32, len(r.HashIDs)-1)]
			p.Hashes = append(p.Hashes, kvblock.Hash(uint64(id)<<8|uint64(j%32)))
		}
		out[i] = p
	}
	return out
}

// BenchmarkComputeBounds: all four bounds over the first 1,000 requests of
// the Mooncake conversation trace (about 750 K block references), 8 replicas
// of 27,500 blocks.
func BenchmarkComputeBounds(b *testing.B) {
	ps := tracePrompts(b, 1000)
	refs := 0
	for _, p := range ps {
		refs += len(p.Hashes)
	}
	b.ReportMetric(float64(refs), "block_refs")
	for b.Loop() {
		ComputeBounds(ps, 8, 27500, 16)
	}
}

// BenchmarkExpandTrace: text for one 8,192-token trace prompt.
func BenchmarkExpandTrace(b *testing.B) {
	rec := TraceRecord{InputLength: 8192, HashIDs: make([]int64, 16)}
	for i := range rec.HashIDs {
		rec.HashIDs[i] = int64(i)
	}
	b.SetBytes(8192 * wordBytes)
	for b.Loop() {
		ExpandTrace(rec, 0, 0)
	}
}

// BenchmarkPromptBlocks: what the harness spends per request to know its
// blocks for the bounds (chat rendering, builtin:sim tokenization, hashing)
// for a 3,136-token W1 prompt.
func BenchmarkPromptBlocks(b *testing.B) {
	r, err := NewRunner(testConfig(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	body, err := buildBody("m", []chatMessage{{Role: "system", Content: words(1, 3072)}, {Role: "user", Content: words(2, 64)}}, 32)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(simtok.Encode(words(1, 3072), false)); n != 3072 {
		b.Fatalf("prompt of %d tokens", n)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r.blocks(body, 0, "")
	}
}
