#!/bin/bash
# Runs the ladder at 20/s on a dev fleet of 4 replicas and B balancers with
# cost_model, reads every balancer's GET /debug/decisions every 0.2 s and
# the engines' scheduler state every 0.1 s, and prints the away requests
# with their decisions (ladder_aways.py) and how true the balancers' view of
# the queues was (view_vs_engine.py).
# Usage: ladder-decisions.sh BIN DIR [SEED] [BALANCERS]
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); D=$2; SEED=${3:-3}; B=${4:-4}
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$D"; mkdir -p "$D"
"$BIN" dev --replicas 4 --balancers "$B" --num-gpu-blocks 27500 --policy cost_model --port 18700 --log-dir "$D" > "$D/dev.out" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null' EXIT
for _ in $(seq 120); do grep -q "Ctrl-C" "$D/dev.out" && break; sleep 0.5; done
ADMIN=$(awk '/^admin URLs/{a=1;next} a && $1 ~ /^balancer-/{split($2,u,":"); print u[3]}' "$D/dev.out")
ENGINES=$(awk '/^admin URLs/{a=1;next} a && $1 ~ /^replica-/{split($5,u,":"); printf "%s%s", s, u[3]; s=","}' "$D/dev.out")
TARGETS=$(seq -s, -f "http://127.0.0.1:%g" 18700 $((18700 + B - 1)))
python3 "$HERE/poll_engines.py" "$D/eng.jsonl" ${ENGINES//,/ } &
PE=$!
( while kill -0 $DEV 2>/dev/null; do for p in $ADMIN; do curl -s "127.0.0.1:$p/debug/decisions" > "$D/d-$p-$(date +%s%N).json"; done; sleep 0.2; done ) &
PD=$!
"$BIN" bench run --target "$TARGETS" --cache-blocks 27500 --replicas 4 --workload ladder --rate 20 \
  --duration 10s --warmup 3s --drain 45s --seed "$SEED" --out "$D/run.json" > "$D/bench.out" 2>&1
kill $PD $PE 2>/dev/null
tail -3 "$D/bench.out"
(cd "$HERE/../../.." && go run ./bench/scripts/analysis/groups "$D/run.json") > "$D/g.tsv"
python3 "$HERE/ladder_aways.py" "$D"
python3 "$HERE/view_vs_engine.py" "$D" "$ENGINES"
