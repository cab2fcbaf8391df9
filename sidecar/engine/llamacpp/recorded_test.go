package llamacpp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/sidecar/engine"
	"github.com/inferrail/inferrail/sidecar/engine/sglang"
	"github.com/inferrail/inferrail/sidecar/engine/vllm"
)

// The pages in testdata were recorded from llama-server built from llama.cpp
// 80fb11a (node-llama-cpp 3.21.1) by make e2e-llamacpp
// (LLAMACPP_RECORD_DIR): --parallel 2 -c 16384, during the end-to-end test
// (busy: one slot streaming a completion, the other holding a 3,645-token
// prompt it served before).

func openPage(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseMetricsRecorded(t *testing.T) {
	for _, tc := range []struct {
		page string
		want engine.Load
	}{
		{"metrics-idle.txt", engine.Load{Kind: engine.KindLlamaCpp, Engines: 1}},
		// prompt_tokens_total 3657 counts the computed tokens only;
		// prompt_tokens_cached_total 3641 the reused ones.
		{"metrics-busy.txt", engine.Load{Kind: engine.KindLlamaCpp, Engines: 1, Running: 1,
			PromptTokensTotal: 3657 + 3641, PrefixQueries: 3657 + 3641, PrefixHits: 3641, GenerationTokensTotal: 8}},
	} {
		t.Run(tc.page, func(t *testing.T) {
			got, err := ParseMetrics(openPage(t, tc.page), 0)
			if err != nil {
				t.Fatalf("ParseMetrics: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseMetrics mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDetectKindRecorded(t *testing.T) {
	p, err := engine.ParsePage(openPage(t, "metrics-busy.txt"), 0)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := engine.DetectKind(p, vllm.Names, sglang.Names, Names)
	if !ok || k != engine.KindLlamaCpp {
		t.Fatalf("DetectKind = %q, %v; want llamacpp", k, ok)
	}
}

func TestParseSlotsRecorded(t *testing.T) {
	idle, err := ParseSlots(openPage(t, "slots-idle.json"), 0)
	if err != nil {
		t.Fatalf("idle: %v", err)
	}
	if diff := cmp.Diff([]Slot{{ID: 0, NCtx: 8192}, {ID: 1, NCtx: 8192}}, idle); diff != "" {
		t.Errorf("idle slots mismatch (-want +got):\n%s", diff)
	}
	busy, err := ParseSlots(openPage(t, "slots-busy.json"), 0)
	if err != nil {
		t.Fatalf("busy: %v", err)
	}
	want := []Slot{
		{ID: 0, NCtx: 8192, Processing: true, PromptTokens: 20, Decoded: 6},
		{ID: 1, NCtx: 8192, PromptTokens: 3645},
	}
	if diff := cmp.Diff(want, busy); diff != "" {
		t.Errorf("busy slots mismatch (-want +got):\n%s", diff)
	}
	if got := Usage(busy); got != 26.0/16384 {
		t.Errorf("Usage = %v, want 26/16384 (the idle slot's kept prompt is not in use)", got)
	}
	if got := Usage(idle); got != 0 {
		t.Errorf("Usage(idle) = %v", got)
	}
}

func TestParsePropsRecorded(t *testing.T) {
	p, err := ParseProps(openPage(t, "props.json"), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := Props{TotalSlots: 2, SlotContext: 8192, ModelAlias: "e2e-model", BuildInfo: "b1-80fb11a"}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("ParseProps mismatch (-want +got):\n%s", diff)
	}
	if got := CapacityTokens(p, nil); got != 2*2*8192 {
		t.Errorf("CapacityTokens = %d", got)
	}
}
