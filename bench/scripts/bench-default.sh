#!/bin/sh
# Regenerates the committed benchmark results and reports for the default
# setup (about 85 minutes on 2 cores). Run after `make build`.
#
# Every run starts a cold fleet of 4 simulated replicas (Llama-3.1-8B on one
# H100, 4,096 KV blocks of 16 tokens each) and replays the same seeded
# arrivals; results go to bench/results/<workload>/ and reports to
# bench/report/<workload>/ with the goals over all of them in
# bench/report/README.md.
#
# W1: 64 system prompts of 3,072 tokens at 48 requests/s, about 70% of round
#   robin's capacity (its load sweep brackets it): the policies, nginx round
#   robin and least_conn in front of the same simulators, the exact-state
#   oracle, a load sweep (0.5x, 1.25x, 1.5x), 2 and 4 balancers, and 2 and 3
#   replicas (replicas needed).
# W6: nothing shared (1,024-token prompts) at 80 requests/s, with a load
#   sweep (0.75x, 1.5x) of least_request and cost_model.
# W2: multi-turn chat, 8 sessions/s of 6 turns.
# mooncake: the first minute of the conversation trace at 2x speed, prompts
#   cut at 8,192 tokens.
#
# WORKLOADS="W1 W6" runs some parts; REPETITIONS (default 2) repeats every run
# with seeds 1, 2, ...
set -eu
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/inferrail}
REPS=${REPETITIONS:-2}
if [ ! -x "$BIN" ]; then
	echo "bench: $BIN not found; run 'make build' first" >&2
	exit 1
fi
compare() {
	out=$1
	shift
	rm -rf "bench/results/$out"
	"$BIN" bench compare --out "bench/results/$out" --report "" \
		--replicas 4 --num-gpu-blocks 4096 --seed 1 --repetitions "$REPS" "$@" ||
		echo "bench: some $out runs failed (see above); the report shows the others" >&2
}
rm -f bench/results/*.json # results of the single-directory layout
for w in ${WORKLOADS:-W1 W6 W2 mooncake}; do
	case $w in
	W1)
		bench/scripts/install-nginx.sh || echo "bench: nginx unavailable; the nginx baselines will fail and be skipped" >&2
		compare W1 --workload W1 --rate 48 --duration 60s --warmup 10s --drain 60s \
			--policies round_robin,least_request,prefix_hash,kv_aware,cost_model \
			--nginx round_robin,least_conn --oracle \
			--load-factors 0.5,1.25,1.5 --load-policies round_robin,cost_model \
			--balancer-counts 2,4 --balancer-policy cost_model \
			--replica-counts 2,3 --replica-policies round_robin,cost_model
		;;
	W6)
		compare W6 --workload W6 --rate 80 --duration 60s --warmup 10s --drain 60s \
			--policies round_robin,least_request,cost_model \
			--load-factors 0.75,1.5 --load-policies least_request,cost_model
		;;
	W2)
		compare W2 --workload W2 --rate 8 --duration 60s --warmup 10s --drain 90s \
			--policies round_robin,least_request,cost_model
		;;
	mooncake)
		compare mooncake --workload mooncake --trace bench/traces/mooncake_conversation_trace.jsonl \
			--speedup 2 --max-input-tokens 8192 --duration 60s --warmup 10s --drain 90s \
			--policies round_robin,prefix_hash,cost_model
		;;
	*)
		echo "bench: unknown workload $w" >&2
		exit 2
		;;
	esac
done
rm -f bench/report/*.md bench/report/*.png
rm -rf bench/report/W1 bench/report/W2 bench/report/W6 bench/report/mooncake
"$BIN" bench report --results bench/results --out bench/report \
	--reproduce "make build && bench/scripts/bench-default.sh"
