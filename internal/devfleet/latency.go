package devfleet

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inferrail/inferrail/balancer/route"
)

// simLatencyKeys are the cost_model keys that are engine constants, in
// order, with the `inferrail sim` flag each one sets.
var simLatencyKeys = []struct{ key, flag string }{
	{"step_overhead", "--step-overhead"},
	{"weight_floor", "--weight-floor"},
	{"linear_tok_per_sec", "--linear-tokens-per-second"},
	{"attention_per_pair_ns", "--attention-ns-per-pair"},
	{"kv_read_per_token_ns", "--kv-read-us-per-token"},
	{"request_overhead", "--request-overhead"},
	{"step_token_budget", "--max-num-batched-tokens"},
}

// ParseSimLatency parses a comma-separated list of key=value pairs naming
// engine constants with the cost_model block's keys and units
// (step_overhead=2ms,linear_tok_per_sec=15667,...) over the defaults (which
// are the simulator's). Every bad pair is reported at once.
func ParseSimLatency(spec string) (route.CostConfig, error) {
	c := route.DefaultCostConfig()
	var errs []string
	for _, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			errs = append(errs, fmt.Sprintf("%q is not key=value", pair))
			continue
		}
		if err := setSimLatency(&c, k, v); err != nil {
			errs = append(errs, err.Error())
		}
	}
	rc := route.DefaultConfig()
	rc.Cost = c
	if err := rc.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("sim latency %q: %s", spec, strings.Join(errs, "; "))
	}
	return c, nil
}

func setSimLatency(c *route.CostConfig, k, v string) error {
	dur := func(d *time.Duration) error {
		x, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not a duration", k, v)
		}
		*d = x
		return nil
	}
	flt := func(f *float64) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", k, v)
		}
		*f = x
		return nil
	}
	switch k {
	case "step_overhead":
		return dur(&c.StepOverhead)
	case "weight_floor":
		return dur(&c.WeightFloor)
	case "request_overhead":
		return dur(&c.RequestOverhead)
	case "linear_tok_per_sec":
		return flt(&c.LinearTokPerSec)
	case "attention_per_pair_ns":
		return flt(&c.AttentionPerPairNS)
	case "kv_read_per_token_ns":
		return flt(&c.KVReadPerTokenNS)
	case "step_token_budget":
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer", k, v)
		}
		c.StepTokenBudget = n
		return nil
	}
	keys := make([]string, len(simLatencyKeys))
	for i, s := range simLatencyKeys {
		keys[i] = s.key
	}
	return fmt.Errorf("unknown key %q (want one of %s)", k, strings.Join(keys, ", "))
}

// SimLatencyArgs returns the `inferrail sim` flags that set c's engine
// constants.
func SimLatencyArgs(c route.CostConfig) []string {
	return []string{
		"--step-overhead", c.StepOverhead.String(),
		"--weight-floor", c.WeightFloor.String(),
		"--linear-tokens-per-second", strconv.FormatFloat(c.LinearTokPerSec, 'g', -1, 64),
		"--attention-ns-per-pair", strconv.FormatFloat(c.AttentionPerPairNS, 'g', -1, 64),
		"--kv-read-us-per-token", strconv.FormatFloat(c.KVReadPerTokenNS/1000, 'g', -1, 64),
		"--request-overhead", c.RequestOverhead.String(),
		"--max-num-batched-tokens", strconv.Itoa(c.StepTokenBudget),
	}
}

// RoutingKeys returns c's keys as a models[].routing block spells them
// (durations as "500ms"), without its policy and seed: what a balancer of
// the fleet gets besides the fleet's policy and seed (Config.Routing).
func RoutingKeys(c route.Config) (map[string]any, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	delete(m, "policy")
	delete(m, "seed")
	return m, nil
}

// routingYAML returns c as a models[].routing block without its policy and
// seed (the fleet's top-level routing sets them), indented for balancerYAML.
func routingYAML(c route.Config) (string, error) {
	m, err := RoutingKeys(c)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(map[string]any{"routing": m})
	if err != nil {
		return "", fmt.Errorf("routing: %w", err)
	}
	var sb strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		sb.WriteString("    " + line + "\n")
	}
	return sb.String(), nil
}
