#!/bin/bash
# Counts a balancer's routing decisions by reason over one bench run of a
# workload on a dev fleet with a routing file, e.g. whether the TPOT guard
# (docs/routing.md#the-tpot-guard) moved any request of a part's workload:
#   guard-fires.sh BIN ROUTING BLOCKS --workload W2 --rate 36 --think 2s \
#     --duration 15s --warmup 5s --drain 28s --seed 1
# with ROUTING a file holding e.g. `slo: {ttft: 2s, tpot: 100ms}`. Prints
# inferrail_balancer_route_decisions_total per reason (decisions.sh, whose
# run and decision reads it then removes).
set -euo pipefail
bin=$1 routing=$2 blocks=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$(dirname "$0")/decisions.sh" "$bin" "$routing" "$blocks" "$dir/run" "$@"
