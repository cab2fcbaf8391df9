#!/bin/bash
# Runs a workload on a dev fleet of 4 replicas with one cost_model balancer,
# keeps GET /debug/decisions every 0.1 s, and prints hits_at_risk.py's
# reading (docs/routing-findings.md, "Predicted hits at risk").
# Usage: hits-decisions.sh BIN DIR BLOCKS BENCH-RUN-FLAGS...
# e.g. hits-decisions.sh bin/inferrail /tmp/w2dec 4096 --workload W2 --think 2s --rate 24 \
#        --duration 15s --warmup 5s --drain 30s --seed 1
set -u
BIN=$1; D=$2; BLOCKS=$3; shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$D"; mkdir -p "$D"
"$BIN" dev --replicas 4 --balancers 1 --policy cost_model --port 18410 --num-gpu-blocks "$BLOCKS" --log-dir "$D/logs" > "$D/dev.out" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null' EXIT
for _ in $(seq 120); do grep -q "Ctrl-C" "$D/dev.out" && break; sleep 0.5; done
ADMIN=$(grep -A1 "^admin URLs" "$D/dev.out" | tail -1 | awk '{print $2}')
EM=$(grep -o "engine http://[0-9.:]*" "$D/dev.out" | awk '{print $2"/metrics"}' | paste -sd,)
( while kill -0 $DEV 2>/dev/null; do curl -s "$ADMIN/debug/decisions" > "$D/d-$(date +%s%N).json"; sleep 0.1; done ) &
POLL=$!
"$BIN" bench run --target http://127.0.0.1:18410 --engine-metrics "$EM" --cache-blocks "$BLOCKS" --replicas 4 \
  --out "$D/run.json" "$@" > "$D/bench.out" 2>&1
kill $POLL 2>/dev/null
python3 "$HERE/hits_at_risk.py" "$D" "$BLOCKS"
