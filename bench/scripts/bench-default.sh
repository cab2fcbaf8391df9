#!/bin/sh
# Regenerates the committed benchmark results (bench/results) and report
# (bench/report) for the default setup: workload W1 (64 system prompts of
# 3,072 tokens under cache pressure), 4 simulated replicas of 4,096 blocks,
# every policy on its own cold fleet, nginx round robin and least_conn in front
# of the same simulators, a load sweep (0.5× and 1.5×) for round_robin and
# cost_model, and cost_model behind 2 and 4 balancers. About 20 minutes.
#
# Run after `make build`; REPETITIONS=3 repeats everything with new seeds.
set -eu
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/inferrail}
if [ ! -x "$BIN" ]; then
	echo "bench: $BIN not found; run 'make build' first" >&2
	exit 1
fi
bench/scripts/install-nginx.sh || echo "bench: nginx unavailable; the nginx baselines will fail and be skipped" >&2
rm -rf bench/results; rm -f bench/report/*.md bench/report/*.png
exec "$BIN" bench compare \
	--workload W1 --rate 24 --duration 60s --warmup 10s --drain 60s --seed 1 \
	--replicas 4 --num-gpu-blocks 4096 --cache-blocks 4096 \
	--policies round_robin,random,least_request,p2c,prefix_hash,kv_aware,cost_model \
	--nginx round_robin,least_conn \
	--load-factors 0.5,1.5 --load-policies round_robin,cost_model \
	--balancer-counts 2,4 --balancer-policy cost_model \
	--repetitions "${REPETITIONS:-1}" \
	--out bench/results --report bench/report
