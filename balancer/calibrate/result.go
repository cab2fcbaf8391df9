package calibrate

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/internal/yamlconf"
)

// Result is a finished calibration.
type Result struct {
	// Engine and Model name what was probed.
	Engine, Model string
	// Cost is the fitted cost model: the prior with the fitted constants.
	Cost route.CostConfig
	// Observations are the fitted measurements (each probe's fastest
	// repetition); Predicted the fitted model's value for each.
	Observations []Observation
	Predicted    []time.Duration
	// HostPerPromptTokenNS is the host's time per prompt token before the
	// engine schedules a request (parsing, tokenization), fitted apart from
	// prefill; it is not a cost_model key (the same on every replica).
	HostPerPromptTokenNS float64
	// RMSRelErr and MaxRelErr are the fit's relative residuals.
	RMSRelErr, MaxRelErr float64
	// Fixed names the constants the probes could not identify; they keep
	// the prior's value.
	Fixed []string
	// Notes are warnings about the run (failed probes, missing engine
	// features).
	Notes []string
	// Rounds is how many full rounds of the plan ran.
	Rounds int
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// fittedKeys are the cost_model keys calibrate fits (the engine's
// constants); the others are assumptions about traffic and policy knobs.
var fittedKeys = []string{"step_overhead", "weight_floor", "linear_tok_per_sec", "attention_per_pair_ns",
	"kv_read_per_token_ns", "request_overhead"}

// WriteYAML writes the cost_model block, which the balancer accepts
// verbatim under a model's routing: (models[].routing.cost_model), with the
// fit's summary as comments.
func (r *Result) WriteYAML(w io.Writer) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# inferrail calibrate: %s, model %s\n", r.Engine, r.Model)
	fmt.Fprintf(&sb, "# %d probes x %d rounds in %v; fit error RMS %.1f%%, max %.1f%% (inferrail calibrate prints each probe on stderr)\n",
		len(r.Observations), r.Rounds, r.Elapsed.Round(time.Second), 100*r.RMSRelErr, 100*r.MaxRelErr)
	fmt.Fprintf(&sb, "# Host time per prompt token (parsing, tokenizing): %s ns, left out: the same on every replica.\n", formatFloat(r.HostPerPromptTokenNS))
	fmt.Fprintf(&sb, "# Paste under models[].routing: in the balancer config.\n")
	c := r.Cost
	keys := []struct{ key, val string }{
		{"step_overhead", c.StepOverhead.String()},
		{"weight_floor", c.WeightFloor.String()},
		{"linear_tok_per_sec", formatFloat(c.LinearTokPerSec)},
		{"attention_per_pair_ns", formatFloat(c.AttentionPerPairNS)},
		{"kv_read_per_token_ns", formatFloat(c.KVReadPerTokenNS)},
		{"request_overhead", c.RequestOverhead.String()},
		{"step_token_budget", strconv.Itoa(c.StepTokenBudget)},
		{"decode_context_tokens", strconv.Itoa(c.DecodeContextTokens)},
		{"queued_prompt_tokens", strconv.Itoa(c.QueuedPromptTokens)},
		{"expected_output_tokens", strconv.Itoa(c.ExpectedOutputTokens)},
		{"hot_prefix_queue_wait", c.HotPrefixQueueWait.String()},
		{"miss_penalty", formatFloat(c.MissPenalty)},
	}
	sb.WriteString("cost_model:\n")
	for _, k := range keys {
		comment := ""
		switch {
		case slices.Contains(r.Fixed, k.key):
			comment = "  # not identified by the probes: the prior's value"
		case slices.Contains(fittedKeys, k.key):
			comment = "  # fitted"
		case k.key == "step_token_budget":
			comment = "  # given (--step-token-budget)"
		default:
			comment = "  # not an engine constant: the prior's value"
		}
		fmt.Fprintf(&sb, "  %s: %s%s\n", k.key, k.val, comment)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// costModelDoc is the document WriteYAML writes.
type costModelDoc struct {
	CostModel route.CostConfig `yaml:"cost_model"`
}

// DecodeCostModel decodes a document holding one cost_model block (what
// WriteYAML writes) strictly over route.DefaultCostConfig and validates it:
// an unknown key or a bad value is an error naming it.
func DecodeCostModel(b []byte) (route.CostConfig, error) {
	doc, err := yamlconf.Decode(b, costModelDoc{CostModel: route.DefaultCostConfig()})
	if err != nil {
		return doc.CostModel, err
	}
	rc := route.DefaultConfig()
	rc.Cost = doc.CostModel
	if err := rc.Validate(); err != nil {
		return doc.CostModel, err
	}
	return doc.CostModel, nil
}

// WriteReport writes the fit, probe by probe, as a table.
func (r *Result) WriteReport(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "probe\tkind\tprompt\tcached\tdecodes\tcontext\tmeasured\tfitted\terror\treps\tspread\t")
	for i, o := range r.Observations {
		rel := float64(r.Predicted[i]-o.Measured) / float64(o.Measured)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%v\t%v\t%+.1f%%\t%d\t%v\t\n", o.Probe, o.Kind, o.PromptTokens, o.CachedTokens,
			o.Decodes, o.DecodeContext, o.Measured.Round(10*time.Microsecond), r.Predicted[i].Round(10*time.Microsecond),
			100*rel, o.Samples, o.Spread.Round(10*time.Microsecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "fit error: RMS %.1f%%, max %.1f%% over %d probes; %d rounds in %v\n",
		100*r.RMSRelErr, 100*r.MaxRelErr, len(r.Observations), r.Rounds, r.Elapsed.Round(100*time.Millisecond))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}
