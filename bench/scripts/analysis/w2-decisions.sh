#!/bin/bash
# Runs W2 at 24 sessions/s (think ~Exp(2 s), the W2 part's 1x) on a dev
# fleet of 4 replicas of 4,096 blocks and one balancer (cost_model unless
# POLICY is given), reads the
# balancer's GET /debug/decisions every 0.2 s, and prints why later turns
# left their previous turn's replica (moves.py).
# Usage: w2-decisions.sh BIN DIR [SEED] [POLICY] (default cost_model)
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); D=$2; SEED=${3:-1}; POLICY=${4:-cost_model}
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$D"; mkdir -p "$D"
"$BIN" dev --replicas 4 --balancers 1 --num-gpu-blocks 4096 --policy "$POLICY" --port 18700 --log-dir "$D" > "$D/dev.out" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null' EXIT
for _ in $(seq 120); do grep -q "Ctrl-C" "$D/dev.out" && break; sleep 0.5; done
ADMIN=$(awk '/^admin URLs/{a=1;next} a && $1 ~ /^balancer-/{split($2,u,":"); print u[3]}' "$D/dev.out")
( while kill -0 $DEV 2>/dev/null; do for p in $ADMIN; do curl -s "127.0.0.1:$p/debug/decisions" > "$D/d-$p-$(date +%s%N).json"; done; sleep 0.2; done ) &
PD=$!
"$BIN" bench run --target http://127.0.0.1:18700 --cache-blocks 4096 --replicas 4 --workload W2 --think 2s --rate 24 \
  --duration 15s --warmup 5s --drain 28s --seed "$SEED" --out "$D/run.json" > "$D/bench.out" 2>&1
kill $PD 2>/dev/null
tail -3 "$D/bench.out"
python3 "$HERE/moves.py" --decisions "$D" "$D/run.json"
