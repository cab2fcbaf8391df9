package calibrate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferrail/inferrail/balancer"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/yamlconf"
)

func fittedResult() *Result {
	c := route.DefaultCostConfig()
	c.StepOverhead = 1990 * time.Microsecond
	c.WeightFloor = 6311 * time.Microsecond
	c.LinearTokPerSec = 15700
	c.AttentionPerPairNS = 3.065
	c.KVReadPerTokenNS = 119.9
	c.RequestOverhead = 16434 * time.Microsecond
	c.StepTokenBudget = 4096
	return &Result{Engine: "http://127.0.0.1:8000", Model: "m", Cost: c, Rounds: 3, Fixed: []string{"kv_read_per_token_ns"},
		Observations: []Observation{{Probe: "cold-16", Kind: KindTTFT, PromptTokens: 16, Measured: 20 * time.Millisecond, Samples: 3}},
		Predicted:    []time.Duration{21 * time.Millisecond}}
}

// The printed block, pasted under a model's routing:, is accepted by the
// balancer's strict config decoder and gives back exactly the fitted
// constants; every key is one the decoder knows.
func TestYAMLRoundTripsThroughTheBalancerConfig(t *testing.T) {
	r := fittedResult()
	var sb strings.Builder
	if err := r.WriteYAML(&sb); err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	doc.WriteString("models:\n  - name: m\n    routing:\n")
	for _, line := range strings.Split(strings.TrimRight(sb.String(), "\n"), "\n") {
		doc.WriteString("      " + line + "\n")
	}
	cfg, err := balancer.DecodeConfig([]byte(doc.String()), balancer.DefaultConfig())
	if err != nil {
		t.Fatalf("balancer.DecodeConfig:\n%s\n%v", doc.String(), err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if diff := cmp.Diff(r.Cost, cfg.Models[0].Routing.Cost); diff != "" {
		t.Errorf("decoded cost_model differs (-fitted +decoded):\n%s", diff)
	}
	// Every key is written: the block does not depend on the defaults of
	// the balancer that reads it.
	missing, err := missingCostKeys([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("the block leaves out %v", missing)
	}
	got, err := DecodeCostModel([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Cost, got); diff != "" {
		t.Errorf("DecodeCostModel differs (-fitted +decoded):\n%s", diff)
	}
	if !strings.Contains(sb.String(), "kv_read_per_token_ns: 119.9  # not identified") {
		t.Errorf("a fixed constant is not marked:\n%s", sb.String())
	}
}

func TestDecodeCostModelRejectsBadInput(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"unknown key", "cost_model:\n  linear_tok_per_s: 1\n", "cost_model.linear_tok_per_s"},
		{"bad value", "cost_model:\n  linear_tok_per_sec: 0\n", "cost_model.linear_tok_per_sec must be > 0"},
		{"wrong type", "cost_model:\n  step_overhead: fast\n", "line 2: cannot unmarshal !!str `fast` into time.Duration"},
		{"not a block", "step_overhead: 1ms\n", "step_overhead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCostModel([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DecodeCostModel(%q) = %v, want an error naming %q", tt.doc, err, tt.want)
			}
		})
	}
}

func TestWriteReport(t *testing.T) {
	var sb strings.Builder
	r := fittedResult()
	r.Notes = []string{"probe x failed"}
	if err := r.WriteReport(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cold-16", "+5.0%", "note: probe x failed"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, sb.String())
		}
	}
}

func missingCostKeys(doc []byte) ([]string, error) {
	return yamlconf.MissingKeys[costModelDoc](doc)
}
