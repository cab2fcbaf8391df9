#!/bin/bash
# Runs W6 on a dev fleet with cost_model, keeps GET /debug/decisions every
# 0.2 s, and prints decisions_vs_ttft.py's reading.
# Usage: w6-decisions.sh BIN DIR [SEED] [RATE]
set -u
BIN=$1; D=$2; SEED=${3:-1}; RATE=${4:-135}
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$D"; mkdir -p "$D"
"$BIN" dev --replicas 4 --num-gpu-blocks 4096 --policy cost_model --port 18400 --log-dir "$D" > "$D/dev.out" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null' EXIT
for _ in $(seq 120); do grep -q "Ctrl-C" "$D/dev.out" && break; sleep 0.5; done
ADMIN=$(grep -A1 "^admin URLs" "$D/dev.out" | tail -1 | awk '{print $2}')
( while kill -0 $DEV 2>/dev/null; do curl -s "$ADMIN/debug/decisions" > "$D/d-$(date +%s%N).json"; sleep 0.2; done ) &
POLL=$!
"$BIN" bench run --target http://127.0.0.1:18400 --cache-blocks 4096 --replicas 4 --workload W6 --rate "$RATE" \
  --duration 30s --warmup 5s --drain 10s --seed "$SEED" --out "$D/run.json" > "$D/bench.out" 2>&1
kill $POLL 2>/dev/null
python3 "$HERE/decisions_vs_ttft.py" "$D"
