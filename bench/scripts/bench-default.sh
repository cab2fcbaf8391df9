#!/bin/sh
# Regenerates the committed benchmark results and reports for the default
# setup (about 30 minutes). Run after `make build`.
#
# W1 (bench/results, bench/report): 64 system prompts of 3,072 tokens under
# cache pressure, 4 simulated replicas of 4,096 blocks, 24 requests/s, every policy on its
# own cold fleet, nginx round robin and least_conn in front of the same
# simulators, a load sweep (0.5x to 3x) for round_robin and cost_model, and
# cost_model behind 2 and 4 balancers.
#
# Mooncake (bench/results/mooncake, bench/report/mooncake): the first minute
# of the conversation trace at 2x speed, prompts cut at 8,192 tokens, for
# round_robin, prefix_hash and cost_model.
#
# WORKLOADS="W1" or "mooncake" runs one part; REPETITIONS=3 repeats with new
# seeds.
set -eu
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/inferrail}
REPS=${REPETITIONS:-1}
if [ ! -x "$BIN" ]; then
	echo "bench: $BIN not found; run 'make build' first" >&2
	exit 1
fi
for w in ${WORKLOADS:-W1 mooncake}; do
	case $w in
	W1)
		bench/scripts/install-nginx.sh || echo "bench: nginx unavailable; the nginx baselines will fail and be skipped" >&2
		rm -f bench/results/*.json bench/report/*.md bench/report/*.png
		"$BIN" bench compare \
			--workload W1 --rate 24 --duration 60s --warmup 10s --drain 60s --seed 1 \
			--replicas 4 --num-gpu-blocks 4096 \
			--policies round_robin,random,least_request,p2c,prefix_hash,kv_aware,cost_model \
			--nginx round_robin,least_conn \
			--load-factors 0.5,1.5,2,3 --load-policies round_robin,cost_model \
			--balancer-counts 2,4 --balancer-policy cost_model \
			--repetitions "$REPS" --out bench/results --report ""
		"$BIN" bench report --results bench/results --out bench/report \
			--reproduce "make build && WORKLOADS=W1 bench/scripts/bench-default.sh"
		;;
	mooncake)
		rm -rf bench/results/mooncake bench/report/mooncake
		"$BIN" bench compare \
			--workload mooncake --trace bench/traces/mooncake_conversation_trace.jsonl \
			--speedup 2 --max-input-tokens 8192 --duration 60s --warmup 10s --drain 90s --seed 1 \
			--replicas 4 --num-gpu-blocks 4096 \
			--policies round_robin,prefix_hash,cost_model \
			--repetitions "$REPS" --out bench/results/mooncake --report ""
		"$BIN" bench report --results bench/results/mooncake --out bench/report/mooncake \
			--reproduce "make build && WORKLOADS=mooncake bench/scripts/bench-default.sh"
		;;
	*)
		echo "bench: unknown workload $w" >&2
		exit 2
		;;
	esac
done
