package sglang

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferrail/inferrail/sidecar/engine"
	w "github.com/inferrail/inferrail/sidecar/engine/internal/msgpackfixture"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
)

var ts = time.Unix(1767225600, 250_000_000).UTC()

// Fixtures from docs/engines.md#sglang-kv-events: page size 4, two pages coalesced, signed hashes.
var (
	fixtureStored = w.Hex(`93 ` + w.TS + ` 91 97 "BlockStored" 92 d3 d5 da 68 22 d0 3e 43 a0 cf 6f 77 20 6f 6c 6c 65 48 c0` +
		` 98 01 02 03 04 05 06 07 08 04 c0 "GPU" 00`)
	fixtureWithMeta = w.Hex(`93 ` + w.TS + ` 91 98 "BlockStoredWithMetadata" 91 d3 d5 da 68 22 d0 3e 43 a0 c0` +
		` 94 01 02 03 04 04 c0 "GPU" 81 "cache_salt" "tenant-7" 01`)
	fixtureRemoved = w.Hex(`93 ` + w.TS + ` 91 93 "BlockRemoved" 91 cf 6f 77 20 6f 6c 6c 65 48 "CPU_PINNED" 02`)
	fixtureCleared = w.Hex(`93 ` + w.TS + ` 91 91 "AllBlocksCleared" 00`)
)

func TestDecodeBatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload []byte
		want    engine.Batch
	}{
		{"coalesced BlockStored", fixtureStored, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.BlockStored{
			EngineHashes: []uint64{0xd5da6822d03e43a0, 0x6f77206f6c6c6548},
			Tokens:       []uint32{1, 2, 3, 4, 5, 6, 7, 8}, BlockSize: 4, Medium: "GPU"}}}},
		{"with cache_salt metadata", fixtureWithMeta, engine.Batch{TS: ts, Rank: 1, Events: []engine.Event{engine.BlockStored{
			EngineHashes: []uint64{0xd5da6822d03e43a0},
			Tokens:       []uint32{1, 2, 3, 4}, BlockSize: 4, Medium: "GPU", CacheSalt: "tenant-7"}}}},
		{"removed from pinned CPU", fixtureRemoved, engine.Batch{TS: ts, Rank: 2, Events: []engine.Event{
			engine.BlockRemoved{EngineHashes: []uint64{0x6f77206f6c6c6548}, Medium: "CPU"}}}},
		{"cleared", fixtureCleared, engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{engine.AllBlocksCleared{}}}},
		{"disk and external media", w.Hex(`93 ` + w.TS + ` 92 93 "BlockRemoved" 91 01 "DISK" 93 "BlockRemoved" 91 02 "EXTERNAL" 00`),
			engine.Batch{TS: ts, Rank: 0, Events: []engine.Event{
				engine.BlockRemoved{EngineHashes: []uint64{1}, Medium: "DISK"},
				engine.BlockRemoved{EngineHashes: []uint64{2}, Medium: "EXTERNAL"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeBatch(tc.payload)
			if err != nil {
				t.Fatalf("DecodeBatch: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecodeBatch mismatch (-want +got):\n%s", diff)
			}
			// The sidecar decodes every engine's events with
			// vllm.DecodeBatch: it must read SGLang's the same way.
			viaVLLM, err := vllm.DecodeBatch(tc.payload)
			if err != nil {
				t.Fatalf("vllm.DecodeBatch: %v", err)
			}
			if diff := cmp.Diff(tc.want, viaVLLM); diff != "" {
				t.Errorf("vllm.DecodeBatch mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeBatchRejectsHostilePayloads(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		fixtureStored[:len(fixtureStored)-3],
		w.Hex(`93 ` + w.TS + ` 91 98 "BlockStoredWithMetadata" 91 01 c0 90 04 c0 "GPU" df 7f ff ff ff`),
		w.Hex(`93 ` + w.TS + ` dc ff ff`),
	} {
		if _, err := DecodeBatch(b); err == nil {
			t.Errorf("DecodeBatch(% x) succeeded", b)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	for _, tc := range []struct {
		file string
		want engine.Load
	}{
		{"v0.5.18.txt", engine.Load{Kind: engine.KindSGLang, Engines: 1, Running: 12, Waiting: 3, KVUsage: 0.37,
			PromptTokensTotal: 50210, PrefixQueries: 50210, PrefixHits: 30112, NumGPUBlocks: 10000, BlockSize: 16}},
		// Two DP ranks, each with two TP replicas whose series repeat rank 0's.
		{"dp2-tp2.txt", engine.Load{Kind: engine.KindSGLang, Engines: 2, Running: 12, Waiting: 1, KVUsage: 0.3,
			PromptTokensTotal: 150, PrefixQueries: 150, PrefixHits: 40, NumGPUBlocks: 2000, BlockSize: 1}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := engine.ParseLoad(f, 0, Names)
			if err != nil {
				t.Fatalf("ParseMetrics: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("ParseMetrics mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPageOfReplicasOnlyIsUnreadable(t *testing.T) {
	page := `sglang:num_running_reqs{tp_rank="1"} 1
sglang:num_queue_reqs{tp_rank="0"} 0
sglang:token_usage{tp_rank="0"} 0.1
`
	_, err := engine.ParseLoad(strings.NewReader(page), 0, Names)
	var mf *engine.MissingFamilyError
	if !errors.As(err, &mf) || !errors.Is(err, engine.ErrUnreadable) {
		t.Fatalf("err = %v, want a MissingFamilyError", err)
	}
}

func TestDetectKind(t *testing.T) {
	tables := []engine.MetricNames{Names, {Kind: engine.KindVLLM, Prefix: "vllm:", Running: []string{"vllm:num_requests_running"}}}
	for _, tc := range []struct {
		page   string
		want   engine.Kind
		wantOK bool
	}{
		{"sglang:num_running_reqs 1\n", engine.KindSGLang, true},
		{"vllm:num_requests_running 1\n", engine.KindVLLM, true},
		{"sglang:token_usage 1\nvllm:num_requests_running 1\n", engine.KindVLLM, true},
		{"http_requests_total 1\n", "", false},
	} {
		p, err := engine.ParsePage(strings.NewReader(tc.page), 0)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := engine.DetectKind(p, tables...)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("DetectKind(%q) = %q, %v; want %q, %v", tc.page, got, ok, tc.want, tc.wantOK)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, s := range [][]byte{fixtureStored, fixtureWithMeta, fixtureRemoved, fixtureCleared} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeBatch(b)
	})
}

func FuzzParseMetrics(f *testing.F) {
	for _, name := range []string{"v0.5.18.txt", "dp2-tp2.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := engine.ParseLoad(strings.NewReader(string(b)), 1<<16, Names)
		if err != nil {
			if !errors.Is(err, engine.ErrUnreadable) {
				t.Fatalf("error %v does not wrap ErrUnreadable", err)
			}
			return
		}
		if l.KVUsage < 0 || l.KVUsage > 1 || l.Engines < 1 || l.NumGPUBlocks < 0 {
			t.Fatalf("implausible load %+v", l)
		}
	})
}
