package enginesim

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string // every fragment must appear
	}{
		{"port", func(c *Config) { c.Port = 70000 }, []string{"--port", "70000"}},
		{"no names", func(c *Config) { c.ServedModelName = nil }, []string{"--served-model-name"}},
		{"blank name", func(c *Config) { c.ServedModelName = []string{" "} }, []string{"--served-model-name", `" "`}},
		{"tokenizer", func(c *Config) { c.Tokenizer = "/models/llama" }, []string{"--tokenizer", "/models/llama"}},
		{"format", func(c *Config) { c.KVEventsFormat = "xml" }, []string{"--kv-events-format", "xml"}},
		{"dp", func(c *Config) { c.DataParallelSize = 0 }, []string{"--data-parallel-size", "0"}},
		{"flavor", func(c *Config) { c.MetricsFlavor = "trt" }, []string{"--metrics-flavor", "trt"}},
		{"engine flags", func(c *Config) { c.Engine.BlockSize = 0; c.Engine.MaxModelLen = 1 }, []string{"--block-size", "--max-model-len"}},
		{"kv events json", func(c *Config) { c.KVEventsConfig = `{"enable_kv_cache_events":true,"bogus":1}` }, []string{"--kv-events-config", "bogus"}},
		{"fault", func(c *Config) { c.Faults = []FaultSpec{{Kind: "status", Status: 42}} }, []string{"--faults[0]", "42"}},
		{"all at once", func(c *Config) { c.Port = -1; c.DataParallelSize = -2; c.MetricsFlavor = "x" },
			[]string{"--port", "--data-parallel-size", "--metrics-flavor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseFaults(t *testing.T) {
	got, err := ParseFaults(`[{"kind":"delay","delay":"150ms","duration":"2s","path":"/v1/"},{"kind":"status","status":503,"count":2}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Delay.Milliseconds() != 150 || got[0].Duration.Seconds() != 2 || got[1].Count != 2 {
		t.Errorf("ParseFaults = %+v", got)
	}
	one, err := ParseFaults(`{"kind":"hang"}`)
	if err != nil || len(one) != 1 {
		t.Errorf("single fault: %v %v", one, err)
	}
	for _, bad := range []string{`[{"kind":"boom"}]`, `[{"kind":"delay"}]`, `[{"kind":"refuse"}]`, `[{"kind":"hang","extra":1}]`, `[{"kind":"delay","delay":"soon"}]`, `{`} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%s) succeeded", bad)
		}
	}
}

func TestMergeReady(t *testing.T) {
	ch := make(chan Output, 4)
	ch <- Output{Tokens: []uint32{2}, PromptTokens: 5}
	ch <- Output{Tokens: []uint32{3}, Finished: true, FinishReason: "length", PromptTokens: 5, CachedTokens: 0}
	ch <- Output{Tokens: []uint32{9}} // after the final one: never merged
	first := []uint32{1}
	got := mergeReady(ch, Output{Tokens: first})
	if len(got.Tokens) != 3 || got.Tokens[2] != 3 || !got.Finished || got.FinishReason != "length" {
		t.Errorf("merged = %+v", got)
	}
	if first[0] != 1 || len(first) != 1 {
		t.Error("the engine's slice was modified")
	}
	if len(ch) != 1 {
		t.Errorf("%d outputs left, want 1", len(ch))
	}
}

func FuzzParseFaults(f *testing.F) {
	f.Add(`[{"kind":"delay","delay":"150ms","duration":"2s","path":"/v1/"}]`)
	f.Add(`{"kind":"status","status":503,"count":2}`)
	f.Fuzz(func(t *testing.T, s string) {
		faults, err := ParseFaults(s)
		if err != nil {
			return
		}
		for _, fs := range faults {
			if verr := fs.validate(); verr != nil {
				t.Fatalf("ParseFaults accepted an invalid fault %+v: %v", fs, verr)
			}
		}
	})
}
