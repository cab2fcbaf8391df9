#!/bin/bash
# Runs W6 on a dev fleet with one policy and reads every engine's scheduler
# state (/inferrail/debug/load) ten times a second; then prints what
# docs/bench-findings.md quotes ("W6 at 1×: the spacing, measured at the engines").
# Usage: w6-engines.sh BIN POLICY DIR [SEED] [RATE]
set -u
BIN=$1; POL=$2; D=$3; SEED=${4:-1}; RATE=${5:-135}
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$D"; mkdir -p "$D"
"$BIN" dev --replicas 4 --num-gpu-blocks 4096 --policy "$POL" --port 18400 --log-dir "$D" > "$D/dev.out" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null' EXIT
for _ in $(seq 120); do grep -q "Ctrl-C" "$D/dev.out" && break; sleep 0.5; done
ENG=$(grep -o 'engine http://127.0.0.1:[0-9]*' "$D/dev.out" | awk -F: '{print $3}')
python3 "$HERE/poll_engines.py" "$D/load.jsonl" $ENG &
POLL=$!
"$BIN" bench run --target http://127.0.0.1:18400 --cache-blocks 4096 --replicas 4 --workload W6 --rate "$RATE" \
  --duration 30s --warmup 5s --drain 10s --seed "$SEED" --out "$D/run.json" > "$D/bench.out" 2>&1
for p in $ENG; do curl -s "http://127.0.0.1:$p/metrics" | grep -E "^vllm:num_preemptions_total"; done > "$D/metrics.txt"
kill $POLL 2>/dev/null
grep -A1 "TPOT p50" "$D/bench.out"
echo "preemptions: $(awk '{s+=$2} END {print s}' "$D/metrics.txt")"
python3 "$HERE/engine_state.py" "$D/load.jsonl"
