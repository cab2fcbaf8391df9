#!/bin/bash
# Runs one bench run on a dev fleet (4 replicas of BLOCKS KV blocks, one
# balancer with the routing keys of the file ROUTING, e.g.
# `slo: {ttft: 2s, tpot: 100ms}`), reads the balancer's GET /debug/decisions
# every 0.2 s into DIR/d-*.json (each read the latest 256 decisions, as
# moves.py and hot_moves.py join them), keeps the run's results in
# DIR/run.json, and prints the decisions' counts by reason. With ENGINES=1
# it also samples every engine's scheduler state ten times a second into
# DIR/load.jsonl (poll_engines.py) and keeps each engine's finished requests
# (GET /inferrail/debug/requests) in DIR/requests-N.json, for free_soon.py.
# Usage: decisions.sh BIN ROUTING BLOCKS DIR <bench run flags>, e.g.
#   decisions.sh bin/inferrail slo.yaml 4096 /tmp/mc --workload mooncake \
#     --trace bench/traces/mooncake_conversation_trace.jsonl --speedup 2 \
#     --max-input-tokens 8192 --duration 20s --warmup 5s --drain 23s --seed 1
set -euo pipefail
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); ROUTING=$2; BLOCKS=$3; D=$4
shift 4
rm -rf "$D"; mkdir -p "$D"
"$BIN" dev --replicas 4 --num-gpu-blocks "$BLOCKS" --port 0 --routing "$ROUTING" --log-dir "$D" > "$D/dev.out" 2>&1 &
DEV=$!
trap 'kill -INT $DEV 2>/dev/null; wait $DEV 2>/dev/null || true' EXIT
for _ in $(seq 200); do grep -q "fleet ready" "$D/dev.out" && break; sleep 0.3; done
CLIENT=$(grep -A1 "^client URLs" "$D/dev.out" | tail -1 | awk '{print $2}' | sed 's|/v1/chat/completions||')
ADMIN=$(grep -A1 "^admin URLs" "$D/dev.out" | tail -1 | awk '{print $2}')
( while kill -0 $DEV 2>/dev/null; do curl -s "$ADMIN/debug/decisions" > "$D/d-$(date +%s%N).json"; sleep 0.2; done ) &
POLL=$!
ENG=$(grep -o "engine http://[0-9.:]*" "$D/dev.out" | sed 's|.*:||')
if [ "${ENGINES:-}" = 1 ]; then
	python3 "$(dirname "$0")/poll_engines.py" "$D/load.jsonl" $ENG &
fi
"$BIN" bench run --target "$CLIENT" "$@" --out "$D/run.json" > "$D/bench.out" 2>&1
sleep 0.5
kill $POLL 2>/dev/null || true
if [ "${ENGINES:-}" = 1 ]; then
	i=0
	for p in $ENG; do
		curl -s "127.0.0.1:$p/inferrail/debug/requests" > "$D/requests-$i.json"
		i=$((i + 1))
	done
fi
curl -s "$ADMIN/metrics" | grep '^inferrail_balancer_route_decisions_total' | sed 's/.*reason="\([^"]*\)"} /\1 /'
