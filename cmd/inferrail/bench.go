package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inferrail/inferrail/balancer/calibrate"
	"github.com/inferrail/inferrail/balancer/route"
	"github.com/inferrail/inferrail/bench"
	"github.com/inferrail/inferrail/bench/render"
	"github.com/inferrail/inferrail/internal/devfleet"
	"github.com/inferrail/inferrail/internal/yamlconf"
)

func init() {
	register(command{name: "bench", summary: "benchmark a fleet open-loop: run, compare policies, report", run: runBench})
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, "Usage: inferrail bench run|compare|report [flags]")
		fmt.Fprintln(stderr, "\n  run      drive one target open-loop with a workload; write JSON results")
		fmt.Fprintln(stderr, "  compare  run every policy (and nginx) on the same arrivals, each on a cold local fleet")
		fmt.Fprintln(stderr, "  report   render a markdown report and PNG charts from result files")
		if len(args) == 0 {
			return errUsage
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "run":
		return runBenchRun(ctx, args[1:], stdout, stderr)
	case "compare":
		return runBenchCompare(ctx, args[1:], stdout, stderr)
	case "report":
		return runBenchReport(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "inferrail bench: unknown subcommand %q (run, compare, report)\n", args[0])
	return errUsage
}

// workloadFlags registers the workload flags; apply fills the named
// workload's defaults and then the flags that were set.
func workloadFlags(fs *flag.FlagSet) (apply func() (bench.WorkloadConfig, error)) {
	name := fs.String("workload", bench.W1, "workload: W1, W2, W3, W6, ladder or mooncake")
	set := map[string]func(*bench.WorkloadConfig, string) error{}
	given := map[string]string{} // flag name → value, for flags on the command line
	var order []string
	record := func(flagName string) func(string) error {
		return func(v string) error {
			if _, ok := given[flagName]; !ok {
				order = append(order, flagName)
			}
			given[flagName] = v
			return nil
		}
	}
	num := func(flagName, usage string, f func(*bench.WorkloadConfig) *int) {
		fs.Func(flagName, usage, record(flagName))
		set[flagName] = func(c *bench.WorkloadConfig, v string) error { _, err := fmt.Sscan(v, f(c)); return err }
	}
	dur := func(flagName, usage string, f func(*bench.WorkloadConfig) *time.Duration) {
		fs.Func(flagName, usage, record(flagName))
		set[flagName] = func(c *bench.WorkloadConfig, v string) error {
			d, err := time.ParseDuration(v)
			*f(c) = d
			return err
		}
	}
	flt := func(flagName, usage string, f func(*bench.WorkloadConfig) *float64) {
		fs.Func(flagName, usage, record(flagName))
		set[flagName] = func(c *bench.WorkloadConfig, v string) error { _, err := fmt.Sscan(v, f(c)); return err }
	}
	flt("rate", "session arrivals per second (Poisson; default per workload)", func(c *bench.WorkloadConfig) *float64 { return &c.Rate })
	dur("duration", "arrival window (default 1m)", func(c *bench.WorkloadConfig) *time.Duration { return &c.Duration })
	num("max-sessions", "at most this many sessions", func(c *bench.WorkloadConfig) *int { return &c.MaxSessions })
	num("groups", "distinct shared prefixes (W1 system prompts)", func(c *bench.WorkloadConfig) *int { return &c.Groups })
	num("prompts-per-group", "distinct questions per shared prefix (ladder)", func(c *bench.WorkloadConfig) *int { return &c.PromptsPerGroup })
	num("system-tokens", "shared system prompt length", func(c *bench.WorkloadConfig) *int { return &c.SystemTokens })
	num("user-tokens", "user message length", func(c *bench.WorkloadConfig) *int { return &c.UserTokens })
	num("output-tokens", "generated tokens per request", func(c *bench.WorkloadConfig) *int { return &c.OutputTokens })
	num("turns", "turns per session (W2, W3)", func(c *bench.WorkloadConfig) *int { return &c.Turns })
	dur("think", "mean think time between turns", func(c *bench.WorkloadConfig) *time.Duration { return &c.Think })
	fs.Func("trace", "Mooncake-format trace (mooncake)", record("trace"))
	set["trace"] = func(c *bench.WorkloadConfig, v string) error { c.TracePath = v; return nil }
	flt("speedup", "trace speed-up factor (mooncake)", func(c *bench.WorkloadConfig) *float64 { return &c.Speedup })
	num("max-input-tokens", "truncate longer trace prompts (mooncake)", func(c *bench.WorkloadConfig) *int { return &c.MaxInputTokens })
	dur("trace-start", "skip this much of the trace's beginning", func(c *bench.WorkloadConfig) *time.Duration { return &c.TraceStart })
	fs.BoolFunc("exact-times", "replay the trace's timestamps as they are, without the arrival jitter of up to 1s\n(for traces with exact timestamps, e.g. a production log; mooncake)", record("exact-times"))
	set["exact-times"] = func(c *bench.WorkloadConfig, v string) error {
		b, err := strconv.ParseBool(v)
		c.ExactTimes = b
		return err
	}
	seed := fs.Uint64("seed", 1, "seed of arrivals and texts")
	return func() (bench.WorkloadConfig, error) {
		c := bench.DefaultWorkload(*name)
		c.Seed = *seed
		for _, n := range order {
			if err := set[n](&c, given[n]); err != nil {
				return c, fmt.Errorf("--%s %q: %w", n, given[n], err)
			}
		}
		return c, nil
	}
}

// benchConfigFlags registers the harness flags.
func benchConfigFlags(fs *flag.FlagSet, cfg *bench.Config) {
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model name sent in requests")
	fs.StringVar(&cfg.Label, "label", cfg.Label, "name of the run in reports")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "requests scheduled before this are left out of the summary")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "bound on one request")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "send a request refused with 429 or 503 again this many times, after its Retry-After, as OpenAI's clients do (0: it fails and ends its session)")
	fs.DurationVar(&cfg.Drain, "drain", cfg.Drain, "wait this long after the last arrival for sessions to finish")
	fs.DurationVar(&cfg.SLO.TTFT, "slo-ttft", cfg.SLO.TTFT, "goodput SLO: largest TTFT")
	fs.DurationVar(&cfg.SLO.TPOT, "slo-tpot", cfg.SLO.TPOT, "goodput SLO: largest TPOT")
	fs.IntVar(&cfg.BlockSize, "block-size", cfg.BlockSize, "engines' KV block size (bounds)")
	fs.IntVar(&cfg.CacheBlocks, "cache-blocks", cfg.CacheBlocks, "one engine's KV blocks (bounds)")
}

// commaList is a repeatable, comma-separated string flag.
type commaList []string

func (c *commaList) String() string { return strings.Join(*c, ",") }
func (c *commaList) Set(v string) error {
	*c = append(*c, splitList(v)...)
	return nil
}

func runBenchRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := bench.DefaultConfig()
	fs := newFlagSet("bench run", "--target URL [--workload W1] [flags]", stderr)
	var targets, metrics commaList
	fs.Var(&targets, "target", "base URL to send to (repeat or comma-separate for several balancers; default http://127.0.0.1:8080)")
	fs.Var(&metrics, "engine-metrics", "engine /metrics URLs, for the engines' hit rate (repeat or comma-separate)")
	fs.IntVar(&cfg.Replicas, "replicas", 0, "replicas behind the target, for the bounds (default: the number of --engine-metrics)")
	benchConfigFlags(fs, &cfg)
	wl := workloadFlags(fs)
	out := fs.String("out", "", "write the JSON result here (gzip-compressed when its name ends in .json.gz)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(targets) > 0 {
		cfg.Targets = targets
	}
	cfg.EngineMetrics = metrics
	w, err := wl()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	res, err := bench.RunWorkload(ctx, cfg, w, log)
	if res == nil {
		return err
	}
	if *out != "" {
		if werr := res.WriteFile(*out); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if terr := bench.WriteTable(stdout, []*bench.Result{res}); terr != nil {
		return errors.Join(err, terr)
	}
	return err
}

func runBenchCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cc, reportDir, err := parseCompare(args, stderr)
	if err != nil {
		return err
	}
	if cc.DryRun {
		return bench.WritePlan(stdout, cc)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	results, err := bench.Compare(ctx, cc, log)
	if len(results) == 0 {
		return err
	}
	if terr := bench.WriteTable(stdout, results); terr != nil {
		return errors.Join(err, terr)
	}
	if reportDir != "" {
		repro := "inferrail bench compare " + strings.Join(args, " ")
		if rerr := render.Write(reportDir, results, repro); rerr != nil {
			return errors.Join(err, rerr)
		}
		fmt.Fprintf(stdout, "\nfull report: %s/%s\n", reportDir, render.ReportFile)
	}
	return err
}

// parseCompare turns bench compare's flags into its configuration and the
// report directory ("" for none).
func parseCompare(args []string, stderr io.Writer) (bench.CompareConfig, string, error) {
	cc := bench.CompareConfig{Fleet: devfleet.DefaultConfig(), Bench: bench.DefaultConfig(), Repetitions: 1, BalancerPolicy: "cost_model"}
	cc.Fleet.Port = 0
	fs := newFlagSet("bench compare", "[--policies a,b] [--workload W1] [flags]", stderr)
	policies := commaList{}
	nginx := commaList{}
	loadPolicies := commaList{}
	var loads, balancers, replicaCounts, replicaPolicies commaList
	fs.Var(&policies, "policies", "balancer policies to compare (default round_robin,random,least_request,p2c,prefix_hash,kv_aware,cost_model;\nthe peer baselines sglang_cache_aware, dynamo_kv and llm_d are accepted too: docs/baselines.md;\na policy with +text, e.g. cost_model+text, runs on balancers without a tokenizer: docs/routing.md)")
	fs.Var(&nginx, "nginx", "nginx baselines in front of the same simulators: round_robin, least_conn (needs nginx installed)")
	fs.IntVar(&cc.Repetitions, "repetitions", cc.Repetitions, "repeat everything with seeds seed, seed+1, ...")
	fs.Var(&loads, "load-factors", "also run --load-policies at these multiples of the rate, e.g. 0.5,1.5")
	fs.Var(&loadPolicies, "load-policies", "policies of the load sweep")
	fs.Var(&balancers, "balancer-counts", "also run --balancer-policy with these numbers of balancers, e.g. 2,4")
	fs.StringVar(&cc.BalancerPolicy, "balancer-policy", cc.BalancerPolicy, "policy of the balancer sweep and of the oracle run")
	fs.BoolVar(&cc.OracleRun, "oracle", false, "also run --balancer-policy on an exact-state fleet: the oracle the report's % oracle uses")
	fs.Var(&replicaCounts, "replica-counts", "also run --replica-policies at the base rate on fleets of these sizes, e.g. 2,3,5,6")
	fs.Var(&replicaPolicies, "replica-policies", "policies of the replicas sweep, e.g. round_robin,cost_model")
	fs.IntVar(&cc.Fleet.Replicas, "replicas", cc.Fleet.Replicas, "simulated replicas per fleet")
	fs.IntVar(&cc.Fleet.Balancers, "balancers", cc.Fleet.Balancers, "balancers per fleet")
	fs.IntVar(&cc.Fleet.CacheBlocks, "num-gpu-blocks", 8192, "KV blocks per simulator")
	fs.StringVar(&cc.Fleet.LogDir, "log-dir", "", "keep the fleets' logs here")
	var balancerPolicies, peerPolicies, capacityRates commaList
	fs.Var(&balancerPolicies, "balancer-policies", "policies of the balancer sweep (default --balancer-policy); best_peer stands for the best --peer-policies")
	fs.Var(&peerPolicies, "peer-policies", "the peers' baseline policies; best_peer in --load-policies or --balancer-policies is the one with the lowest TTFT p99 at the base load")
	fs.Var(&capacityRates, "capacity-rates", "first measure --capacity-policy's capacity at these ascending rates (a trace's speed-ups) and make it the base load")
	fs.StringVar(&cc.Capacity.Policy, "capacity-policy", "round_robin", "policy of the capacity search")
	fs.DurationVar(&cc.Capacity.Duration, "capacity-duration", 0, "arrival window of a capacity run (default --duration)")
	fs.DurationVar(&cc.Capacity.Warmup, "capacity-warmup", 0, "warm-up of a capacity run (default --warmup)")
	fs.DurationVar(&cc.Capacity.Drain, "capacity-drain", 0, "drain of a capacity run (default --drain)")
	fs.BoolVar(&cc.DryRun, "dry-run", false, "print the runs and the time budget, run nothing")
	simLatency := fs.String("sim-latency", "", "the simulators' latency constants, as cost_model keys, e.g. step_overhead=2ms,linear_tok_per_sec=15667 (default: the simulator's)")
	costModel := fs.String("cost-model", "", "file with the balancers' cost_model block, e.g. from inferrail calibrate --out (default: the policy's)")
	routing := fs.String("routing", "", "file with the balancers' models[].routing keys but policy and seed, e.g. spread_margin: 0.5 (default: the defaults); --cost-model's block replaces its cost_model")
	benchConfigFlags(fs, &cc.Bench)
	wl := workloadFlags(fs)
	out := fs.String("out", "bench/results", "directory for the results (gzip JSON, one NAME-repN.json.gz per run)")
	reportDir := fs.String("report", "bench/report", "directory for the markdown report and charts (empty: none)")
	if err := parseFlags(fs, args); err != nil {
		return cc, "", err
	}
	if len(policies) == 0 {
		policies = commaList{"round_robin", "random", "least_request", "p2c", "prefix_hash", "kv_aware", "cost_model"}
	}
	cc.Policies, cc.Nginx, cc.LoadPolicies = policies, nginx, loadPolicies
	for _, l := range []struct {
		flag  string
		names []string
	}{{"--policies", policies}, {"--load-policies", loadPolicies}, {"--replica-policies", replicaPolicies},
		{"--balancer-policy", []string{cc.BalancerPolicy}}, {"--balancer-policies", balancerPolicies}, {"--peer-policies", peerPolicies}} {
		sweep := l.flag == "--load-policies" || l.flag == "--balancer-policies"
		for _, n := range l.names {
			if !bench.KnownPolicy(n) && !(sweep && n == bench.BestPeerToken) {
				return cc, "", fmt.Errorf("%s: %q is not a policy (one of %v, the baselines %v, either with %s for balancers without a tokenizer, or %s in a sweep)",
					l.flag, n, route.Policies, route.Baselines, bench.TextPrefixSuffix, bench.BestPeerToken)
			}
		}
	}
	for _, v := range loads {
		var f float64
		if _, err := fmt.Sscan(v, &f); err != nil || f <= 0 {
			return cc, "", fmt.Errorf("--load-factors: %q is not a positive number", v)
		}
		cc.LoadFactors = append(cc.LoadFactors, f)
	}
	cc.BalancerPolicies, cc.PeerPolicies = balancerPolicies, peerPolicies
	prev := 0.0
	for _, v := range capacityRates {
		var f float64
		if _, err := fmt.Sscan(v, &f); err != nil || f <= prev {
			return cc, "", fmt.Errorf("--capacity-rates: %q is not a positive number above the one before", v)
		}
		prev = f
		cc.Capacity.Rates = append(cc.Capacity.Rates, f)
	}
	var err error
	if cc.BalancerCounts, err = positiveInts("--balancer-counts", balancers); err != nil {
		return cc, "", err
	}
	if cc.ReplicaCounts, err = positiveInts("--replica-counts", replicaCounts); err != nil {
		return cc, "", err
	}
	cc.ReplicaPolicies = replicaPolicies
	if (len(cc.ReplicaCounts) == 0) != (len(cc.ReplicaPolicies) == 0) {
		return cc, "", errors.New("--replica-counts and --replica-policies go together")
	}
	if cc.Workload, err = wl(); err != nil {
		return cc, "", err
	}
	if *simLatency != "" {
		c, err := devfleet.ParseSimLatency(*simLatency)
		if err != nil {
			return cc, "", fmt.Errorf("--sim-latency: %w", err)
		}
		cc.Fleet.SimLatency = &c
	}
	if *routing != "" {
		rc, err := readRouting(*routing)
		if err != nil {
			return cc, "", err
		}
		cc.Fleet.Routing = &rc
	}
	if *costModel != "" {
		b, err := os.ReadFile(*costModel)
		if err != nil {
			return cc, "", fmt.Errorf("--cost-model: %w", err)
		}
		c, err := calibrate.DecodeCostModel(b)
		if err != nil {
			return cc, "", fmt.Errorf("--cost-model %s: %w", *costModel, err)
		}
		if cc.Fleet.Routing == nil {
			rc := route.DefaultConfig()
			cc.Fleet.Routing = &rc
		}
		cc.Fleet.Routing.Cost = c
	}
	cc.OutDir = *out
	return cc, *reportDir, nil
}

// readRouting reads --routing's file: models[].routing keys decoded strictly
// over the defaults and validated; policy and seed are refused (--policies
// and --seed set them, and a file that set them would make every policy
// one).
func readRouting(path string) (route.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return route.Config{}, fmt.Errorf("--routing: %w", err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(b, &keys); err != nil {
		return route.Config{}, fmt.Errorf("--routing %s: %w", path, err)
	}
	for _, k := range []string{"policy", "seed"} {
		if _, ok := keys[k]; ok {
			return route.Config{}, fmt.Errorf("--routing %s: %s is set by --policies and --seed, not the file", path, k)
		}
	}
	rc, err := yamlconf.Decode(b, route.DefaultConfig())
	if err == nil {
		err = rc.Validate()
	}
	if err != nil {
		return route.Config{}, fmt.Errorf("--routing %s: %w", path, err)
	}
	return rc, nil
}

// positiveInts parses a list flag of positive integers.
func positiveInts(flagName string, vs []string) ([]int, error) {
	var out []int
	for _, v := range vs {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 || fmt.Sprint(n) != v {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flagName, v)
		}
		out = append(out, n)
	}
	return out, nil
}

func runBenchReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench report", "[--results DIR] [--out DIR]", stderr)
	in := fs.String("results", "bench/results", "directory of results (.json.gz or plain .json), or of one subdirectory of results per workload")
	out := fs.String("out", "bench/report", "directory for report.md and the charts (with subdirectories: <workload>/report.md and README.md)")
	repro := fs.String("reproduce", "", "command line shown in the report as the way to reproduce it")
	readme := fs.String("readme", "", "also write the headline table between the bench-headline markers of this file (e.g. README.md)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !render.HasResults(*in) {
		sets, err := render.ReadTree(*in)
		if err != nil {
			return err
		}
		if err := render.WriteTree(*out, sets, *repro); err != nil {
			return err
		}
		if *readme != "" {
			if err := render.SpliceReadme(*readme, render.HeadlineSnippet(sets, filepath.ToSlash(*out)+"/")); err != nil {
				return err
			}
		}
		for _, s := range sets {
			fmt.Fprintf(stdout, "%s:\n", s.Workload)
			var results []*bench.Result
			for _, g := range s.Groups {
				results = append(results, g.Reps...)
			}
			if err := bench.WriteTable(stdout, results); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "report: %s/%s\n", *out, render.IndexFile)
		return nil
	}
	if *readme != "" {
		return fmt.Errorf("--readme %s: %s holds results, not one directory per part", *readme, *in)
	}
	results, err := render.ReadDir(*in)
	if err != nil {
		return err
	}
	results = render.Ordered(results)
	if err := render.Write(*out, results, *repro); err != nil {
		return err
	}
	if err := bench.WriteTable(stdout, results); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nreport: %s/%s\n", *out, render.ReportFile)
	return nil
}
