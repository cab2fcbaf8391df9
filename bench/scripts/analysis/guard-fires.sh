#!/bin/bash
# Counts a balancer's routing decisions by reason over one bench run of a
# workload on a dev fleet with a routing file, e.g. whether the TPOT guard
# (docs/routing.md#the-tpot-guard) moved any request of a part's workload:
#   guard-fires.sh BIN ROUTING BLOCKS --workload W2 --rate 36 --think 2s \
#     --duration 15s --warmup 5s --drain 28s --seed 1
# with ROUTING a file holding e.g. `slo: {ttft: 2s, tpot: 100ms}`. Prints
# inferrail_balancer_route_decisions_total per reason.
set -euo pipefail
bin=$1 routing=$2 blocks=$3
shift 3
dir=$(mktemp -d)
"$bin" dev --replicas 4 --num-gpu-blocks "$blocks" --port 0 --routing "$routing" > "$dir/dev.out" 2>&1 &
dev=$!
trap 'kill -INT $dev 2>/dev/null; wait $dev 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 200); do grep -q "fleet ready" "$dir/dev.out" && break; sleep 0.3; done
client=$(grep -A1 "^client URLs" "$dir/dev.out" | tail -1 | awk '{print $2}' | sed 's|/v1/chat/completions||')
admin=$(grep -A1 "^admin URLs" "$dir/dev.out" | tail -1 | awk '{print $2}')
"$bin" bench run --target "$client" "$@" --out "$dir/run.json" > "$dir/run.log" 2>&1
curl -s "$admin/metrics" | grep '^inferrail_balancer_route_decisions_total' | sed 's/.*reason="\([^"]*\)"} /\1 /'
