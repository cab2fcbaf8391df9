package vllm

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/inferrail/inferrail/internal/enginesim/kvevents"
	"github.com/inferrail/inferrail/sidecar/engine"
)

// The simulator's encoder (every format it imitates) and this decoder agree.
func TestDecodesSimulator(t *testing.T) {
	p := uint64(7)
	evs := []kvevents.Event{
		{Type: kvevents.BlockStored, BlockHashes: []uint64{1 << 63, 2}, ParentBlockHash: &p, TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 2, LoRAName: "ad"},
		{Type: kvevents.BlockRemoved, BlockHashes: []uint64{9}},
		{Type: kvevents.AllBlocksCleared},
	}
	for _, f := range []kvevents.Format{kvevents.FormatMap, kvevents.FormatArray, kvevents.FormatArrayV010} {
		b := kvevents.AppendBatch(nil, f, time.Unix(1767225600, 0), evs, 3)
		got, err := DecodeBatch(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		lora := "ad"
		if f == kvevents.FormatArrayV010 {
			lora = ""
		}
		kind := "full_attention"
		if f == kvevents.FormatArrayV010 {
			kind = ""
		}
		want := engine.Batch{TS: time.Unix(1767225600, 0).UTC(), Rank: 3, Events: []engine.Event{
			engine.BlockStored{EngineHashes: []uint64{1 << 63, 2}, Parent: &p, Tokens: []uint32{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU", LoRA: lora, SpecKind: kind},
			engine.BlockRemoved{EngineHashes: []uint64{9}, Medium: "GPU"},
			engine.AllBlocksCleared{},
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f, diff)
		}
	}
}
