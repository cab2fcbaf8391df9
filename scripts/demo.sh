#!/bin/sh
# make demo: start a local fleet (4 simulated replicas, their sidecars, one
# balancer, gossip on loopback) for each policy in turn, drive it with the W1
# workload (shared system prompts under cache pressure) open-loop, and compare
# round_robin with cost_model. Takes about two minutes; prints a table and
# where the full report (markdown + PNG charts) is.
set -eu
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/inferrail}
OUT=${DEMO_OUT:-${TMPDIR:-/tmp}/inferrail-demo}
DURATION=${DEMO_DURATION:-45s}
RATE=${DEMO_RATE:-48}
if [ ! -x "$BIN" ]; then
	echo "demo: $BIN not found; run 'make build' first" >&2
	exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
echo "demo: W1 at $RATE sessions/s for $DURATION per policy, each on a fresh 4-replica fleet (logs in $OUT/logs)"
"$BIN" bench compare \
	--policies round_robin,cost_model \
	--workload W1 --rate "$RATE" --duration "$DURATION" --warmup 10s --drain 30s \
	--replicas 4 --num-gpu-blocks 4096 --cache-blocks 4096 \
	--out "$OUT/results" --report "$OUT/report" --log-dir "$OUT/logs" 2>"$OUT/bench.log" || {
	echo "demo: bench failed; see $OUT/bench.log" >&2
	tail -n 20 "$OUT/bench.log" >&2
	exit 1
}
