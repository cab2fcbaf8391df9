package vllm

import (
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// benchPayload is a map-era batch of n BlockStored events of 4 blocks of 16
// tokens each (a realistic busy step), encoded like msgspec would.
func benchPayload(b *testing.B, n int, arrayEra bool) []byte {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	events := make([]any, n)
	for i := range events {
		hashes := []uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		tokens := make([]uint32, 64)
		for j := range tokens {
			tokens[j] = r.Uint32N(150000)
		}
		parent := any(nil)
		if i%2 == 1 {
			parent = r.Uint64()
		}
		if arrayEra {
			events[i] = []any{"BlockStored", hashes, parent, tokens, 16, nil, "GPU", nil, []any{nil, nil, nil, nil}, 0, "full_attention", nil}
			continue
		}
		events[i] = map[string]any{"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
			"token_ids": tokens, "block_size": 16, "lora_id": nil, "medium": "GPU", "lora_name": nil,
			"extra_keys": []any{nil, nil, nil, nil}, "group_idx": 0, "kv_cache_spec_kind": "full_attention"}
	}
	p, err := msgpack.Marshal([]any{1767225600.25, events, 0})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func benchDecode(b *testing.B, arrayEra bool) {
	const events = 32
	p := benchPayload(b, events, arrayEra)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		batch, err := DecodeBatch(p)
		if err != nil || len(batch.Events) != events {
			b.Fatalf("DecodeBatch: %d events, %v", len(batch.Events), err)
		}
	}
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDecodeBatchMap decodes v0.24+ map-encoded events.
func BenchmarkDecodeBatchMap(b *testing.B) { benchDecode(b, false) }

// BenchmarkDecodeBatchArray decodes v0.22 array-encoded events.
func BenchmarkDecodeBatchArray(b *testing.B) { benchDecode(b, true) }
