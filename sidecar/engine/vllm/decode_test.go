package vllm

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/sidecar/engine"
	w "github.com/inferrail/inferrail/sidecar/engine/internal/msgpackfixture"
)

var ts = time.Unix(1767225600, 250_000_000).UTC()

func u64(v uint64) *uint64 { return &v }

// Fixtures from docs/engines.md#vllm-byte-fixtures, one per vLLM era.
var (
	// (a) v0.24.0+ / main: tagged map, 239 bytes.
	fixtureMapStored = w.Hex(`93 ` + w.TS + ` 91 8b "type" "BlockStored" "block_hashes" 91 ` + w.Hash +
		` "parent_block_hash" c0 "token_ids" ` + w.Tokens16 + ` "block_size" 10 "lora_id" c0 "medium" "GPU"` +
		` "lora_name" c0 "extra_keys" 91 c0 "group_idx" 00 "kv_cache_spec_kind" "full_attention" 00`)
	// (b) v0.22.0–v0.23.x: 11 positional fields, 118 bytes.
	fixtureArray11 = w.Hex(`93 ` + w.TS + ` 91 9c "BlockStored" 91 ` + w.Hash + ` c0 ` + w.Tokens16 +
		` 10 c0 "GPU" c0 91 c0 00 "full_attention" c0 00`)
	// (c) v0.10.2–v0.13.x: 6 positional fields, 98 bytes.
	fixtureArray6 = w.Hex(`93 ` + w.TS + ` 91 97 "BlockStored" 91 ` + w.Hash + ` c0 ` + w.Tokens16 + ` 10 c0 "GPU" 00`)
	// v0.9.0: outer [ts, events], 5 fields, signed builtin hash (-2).
	fixtureV090 = w.Hex(`92 ` + w.TS + ` 91 96 "BlockStored" 91 fe c0 ` + w.Tokens16 + ` 10 c0`)
	// v0.14–v0.16: 7 fields with a lora_name; parent given as int64.
	fixtureArray7 = w.Hex(`93 ` + w.TS + ` 91 98 "BlockStored" 91 ` + w.Hash + ` d3 ff ff ff ff ff ff ff 9c ` +
		w.Tokens16 + ` 10 01 "GPU" "sql-lora" 02`)
	// (d) current BlockRemoved, 76 bytes.
	fixtureMapRemoved = w.Hex(`93 ` + w.TS + ` 91 84 "type" "BlockRemoved" "block_hashes" 91 ` + w.Hash +
		` "medium" "GPU" "group_idx" 00 00`)
	// (e) AllBlocksCleared, map and array eras.
	fixtureMapCleared   = w.Hex(`93 ` + w.TS + ` 91 81 "type" "AllBlocksCleared" 00`)
	fixtureArrayCleared = w.Hex(`93 ` + w.TS + ` 91 91 "AllBlocksCleared" 00`)
	// (f) hash as bytes (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0), map era.
	fixtureBinHash = w.Hex(`93 ` + w.TS + ` 91 8b "type" "BlockStored" "block_hashes" 91 ` + w.HashBin +
		` "parent_block_hash" ` + w.HashBin + ` "token_ids" ` + w.Tokens16 + ` "block_size" 10 "lora_id" c0 "medium" "cpu"` +
		` "lora_name" c0 "extra_keys" 91 c0 "group_idx" 01 "kv_cache_spec_kind" "sliding_window" 03`)
)

func TestFixtureSizesMatchEnginesMd(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want int
	}{
		{"a map BlockStored", fixtureMapStored, 239},
		{"b array v0.22", fixtureArray11, 118},
		{"c array v0.10.2", fixtureArray6, 98},
		{"d map BlockRemoved", fixtureMapRemoved, 76},
	} {
		if len(tc.b) != tc.want {
			t.Errorf("%s: %d bytes, docs/engines.md says %d", tc.name, len(tc.b), tc.want)
		}
	}
}

func TestDecodeBatchEras(t *testing.T) {
	gpuStored := engine.BlockStored{
		EngineHashes: []uint64{w.HashValue},
		Tokens:       w.TokenIDs,
		BlockSize:    16,
		Medium:       "GPU",
	}
	withKind := gpuStored
	withKind.SpecKind = "full_attention"
	v090 := gpuStored
	v090.EngineHashes = []uint64{0xfffffffffffffffe}
	lora := gpuStored
	lora.Parent = u64(0xffffffffffffff9c)
	lora.LoRA = "sql-lora"
	lora.LoRAID = 1
	bin := gpuStored
	bin.Parent = u64(w.HashValue)
	bin.Medium = "CPU"
	bin.GroupIdx = 1
	bin.SpecKind = "sliding_window"
	bin.BlockSize = 16
	bin.Tokens = w.TokenIDs
	bin.BlockSize = 16

	for _, tc := range []struct {
		name    string
		payload []byte
		want    engine.Batch
	}{
		{"a v0.24+ map", fixtureMapStored, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{withKind}}},
		{"b v0.22 array 11", fixtureArray11, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{withKind}}},
		{"c v0.10.2 array 6", fixtureArray6, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{gpuStored}}},
		{"v0.9.0 two-element batch", fixtureV090, engine.Batch{TS: ts, Rank: -1, Events: []engine.Event{v090}}},
		{"v0.14 lora_name", fixtureArray7, engine.Batch{TS: ts, Rank: 2, Events: []engine.Event{lora}}},
		{"d map removed", fixtureMapRemoved, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{
			engine.BlockRemoved{EngineHashes: []uint64{w.HashValue}, Medium: "GPU"}}}},
		{"e map cleared", fixtureMapCleared, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.AllBlocksCleared{}}}},
		{"e array cleared", fixtureArrayCleared, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.AllBlocksCleared{}}}},
		{"f bytes hash", fixtureBinHash, engine.Batch{TS: ts, Rank: 3, Events: []engine.Event{bin}}},
		{"map-shaped outer batch", w.Hex(`83 "ts" ` + w.TS + ` "events" 91 91 "AllBlocksCleared" "data_parallel_rank" 05`),
			engine.Batch{TS: ts, Rank: 5, Events: []engine.Event{engine.AllBlocksCleared{}}}},
		{"extra trailing batch and event fields", w.Hex(`94 ` + w.TS + ` 91 93 "BlockRemoved" 91 01 "GPU" 00 "future"`),
			engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.BlockRemoved{EngineHashes: []uint64{1}, Medium: "GPU"}}}},
		{"unknown event tag skipped", w.Hex(`93 ` + w.TS + ` 92 92 "KVConnectorEvent" 01 91 "AllBlocksCleared" 00`),
			engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.AllBlocksCleared{}}}},
		{"missing trailing fields", w.Hex(`93 ` + w.TS + ` 91 92 "BlockStored" 92 01 02 c0`),
			engine.Batch{TS: ts, Rank: -1, Events: []engine.Event{engine.BlockStored{EngineHashes: []uint64{1, 2}, Medium: "GPU"}}}},
		{"unknown map keys and locality", w.Hex(`93 ` + w.TS + ` 91 85 "type" "BlockRemoved" "block_hashes" 91 07 "medium" "GPU" "locality" "LOCAL" "new_thing" 92 01 02 00`),
			engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.BlockRemoved{EngineHashes: []uint64{7}, Medium: "GPU"}}}},
		{"placeholder offload event", w.Hex(`93 ` + w.TS + ` 91 87 "type" "BlockStored" "block_hashes" 91 07 "parent_block_hash" c0 "token_ids" 90 "block_size" 00 "medium" "CPU" "lora_name" c0 00`),
			engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.BlockStored{EngineHashes: []uint64{7}, Tokens: []uint32{}, Medium: "CPU"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeBatch(tc.payload)
			if err != nil {
				t.Fatalf("DecodeBatch: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecodeBatch mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtraKeysGiveCacheSaltAndOpacity(t *testing.T) {
	for _, tc := range []struct {
		name       string
		parent     string
		extra      string
		lora       string
		wantSalt   string
		wantOpaque bool
	}{
		{"none", "c0", "91 c0", "c0", "", false},
		{"salt on first block", "c0", `91 91 "s1"`, "c0", "s1", false},
		{"lora then salt", "c0", `91 92 "ad" "s2"`, `"ad"`, "s2", false},
		{"lora only", "c0", `91 91 "ad"`, `"ad"`, "", false},
		{"multimodal tuple", "c0", `91 91 92 "mmhash" 00`, "c0", "", true},
		{"prompt embeddings digest", "c0", `91 91 c4 02 01 02`, "c0", "", true},
		{"string on a later block", "07", `91 91 "x"`, "c0", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := w.Hex(`93 ` + w.TS + ` 91 87 "type" "BlockStored" "block_hashes" 91 01 "parent_block_hash" ` + tc.parent +
				` "token_ids" 90 "block_size" 10 "lora_name" ` + tc.lora + ` "extra_keys" ` + tc.extra + ` 00`)
			b, err := DecodeBatch(p)
			if err != nil {
				t.Fatal(err)
			}
			ev := b.Events[0].(engine.BlockStored)
			if ev.CacheSalt != tc.wantSalt || ev.Opaque != tc.wantOpaque {
				t.Errorf("salt %q opaque %v, want %q %v", ev.CacheSalt, ev.Opaque, tc.wantSalt, tc.wantOpaque)
			}
		})
	}
}

func TestHostilePayloadsFailWithoutAllocating(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"not an array", w.Hex(`01`)},
		{"batch array of one", w.Hex(`91 ` + w.TS)},
		{"events array claims 2^32-1", w.Hex(`93 ` + w.TS + ` dd ff ff ff ff`)},
		{"hashes array claims 2^32-1", w.Hex(`93 ` + w.TS + ` 91 92 "BlockRemoved" dd ff ff ff ff`)},
		{"map claims 2^32-1", w.Hex(`93 ` + w.TS + ` 91 df ff ff ff ff`)},
		{"string claims 2^32-1", w.Hex(`93 ` + w.TS + ` 91 91 db ff ff ff ff 41`)},
		{"skipped value claims 2^32-1", w.Hex(`94 ` + w.TS + ` 90 00 c6 ff ff ff ff`)},
		{"truncated", fixtureMapStored[:100]},
		{"token id out of range", w.Hex(`93 ` + w.TS + ` 91 94 "BlockStored" 91 01 c0 91 cf 00 00 00 01 00 00 00 00`)},
		{"negative token id", w.Hex(`93 ` + w.TS + ` 91 94 "BlockStored" 91 01 c0 91 ff`)},
		{"float hash", w.Hex(`93 ` + w.TS + ` 91 92 "BlockRemoved" 91 ` + w.TS)},
		{"empty event array", w.Hex(`93 ` + w.TS + ` 91 90 00`)},
		{"unknown code", w.Hex(`93 ` + w.TS + ` 91 c1 00`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(5, func() { _, _ = DecodeBatch(tc.b) })
			if _, err := DecodeBatch(tc.b); err == nil {
				t.Errorf("DecodeBatch(% x) succeeded, want an error", tc.b)
			}
			if allocs > 40 {
				t.Errorf("DecodeBatch allocated %v times on a hostile payload", allocs)
			}
		})
	}
}

// Deeply nested values are skipped iteratively.
func TestDeepNestingIsSkipped(t *testing.T) {
	deep := append(w.Hex(`94 `+w.TS+` 90 00`), slices.Repeat([]byte{0x91}, 1<<16)...)
	deep = append(deep, 0xc0)
	b, err := DecodeBatch(deep)
	if err != nil {
		t.Fatalf("DecodeBatch: %v", err)
	}
	if b.Rank != 0 || len(b.Events) != 0 {
		t.Errorf("got %+v", b)
	}
}

// Every prefix of a valid payload fails cleanly, and random mutations never
// panic.
func TestTruncationsAndMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range [][]byte{fixtureMapStored, fixtureArray11, fixtureBinHash, fixtureMapRemoved} {
		for i := range len(f) {
			if _, err := DecodeBatch(f[:i]); err == nil {
				t.Errorf("prefix of %d bytes decoded", i)
			}
		}
		for range 2000 {
			m := slices.Clone(f)
			for range 1 + r.IntN(4) {
				m[r.IntN(len(m))] = byte(r.Uint32())
			}
			_, _ = DecodeBatch(m)
		}
	}
}

// DecodeBatch and Names are the adapter's API: the table names vLLM, an
// empty payload is an error but not an unreadable metrics page.
func TestDecodeBatchAndNames(t *testing.T) {
	if Names.Kind != engine.KindVLLM {
		t.Errorf("Names.Kind = %q", Names.Kind)
	}
	if _, err := DecodeBatch(fixtureMapCleared); err != nil {
		t.Error(err)
	}
	if _, err := DecodeBatch(nil); err == nil || errors.Is(err, engine.ErrUnreadable) {
		t.Errorf("DecodeBatch(nil) = %v", err)
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, s := range [][]byte{fixtureMapStored, fixtureArray11, fixtureArray6, fixtureV090, fixtureArray7,
		fixtureMapRemoved, fixtureMapCleared, fixtureArrayCleared, fixtureBinHash} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeBatch(b)
		if err != nil {
			return
		}
		for _, ev := range got.Events {
			if s, ok := ev.(engine.BlockStored); ok && len(s.Tokens) > len(b) {
				t.Fatalf("%d tokens from %d bytes", len(s.Tokens), len(b))
			}
		}
	})
}
