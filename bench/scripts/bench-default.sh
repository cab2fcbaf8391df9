#!/bin/sh
# Regenerates the committed benchmark matrix (bench/results/<part>/) and its
# report (bench/report/). Run after `make build`, on a machine with nothing
# else running. `WORKLOADS="ladder"` (or `make bench WORKLOADS=ladder`)
# reruns one part alone; the report always merges every part present in
# bench/results, so the matrix can be refreshed one part at a time.
#
# Every run starts a cold fleet of 4 simulated replicas (Llama-3.1-8B on one
# H100; KV blocks of 16 tokens) and replays the same seeded arrivals. Each
# part:
#   1. measures round robin's capacity: round robin at the part's ladder of
#      rates (CAPACITY_RATES, a trace's speed-ups), one run each with the
#      part's own windows (shorter ones let queues stay short and put 1x
#      beyond the capacity: W6 measured 140/s with 15 s windows, where every
#      policy missed the SLO with 30 s ones), in
#      ascending order until one leaves the SLO; a rate is within when its
#      TTFT p99 is within the SLO's TTFT (2 s; 10 s for mooncake-h100, see
#      below) with >= 99% of requests within the SLO. The highest rate
#      within is then run again on the second repetition's arrivals (seed
#      2), and the search steps down a rate while that run is beyond: the
#      capacity is the highest rate within on both seeds the matrix runs
#      (one run per rate had put W6's 1x at 135/s and the ladder's at 24,
#      where round robin's seed-2 cell left the SLO). That rate is 1x; when
#      even the lowest rate is beyond, the lowest is 1x and the report says
#      so.
#   2. runs every policy of $POLICIES at 1x; round_robin, the best peer
#      policy (lowest p99 among $PEERS at 1x, chosen after the first
#      repetition) and cost_model also at 0.5x and 1.5x (the ladder: 1.5x
#      only, see the budget), and with 4
#      balancers; all of it $REPETITIONS times (seeds 1, 2).
# Peer policies that the binary does not know fail to start, are logged and
# left out; the report shows their cells as not measured.
#
# Parts (policies P = 7 by default; W1 adds prefix_hash, kv_aware, the two
# nginx baselines and the exact-state oracle):
#   W1             64 system prompts of 3,072 tokens, 4,096 blocks
#   W2             multi-turn chat, 6 turns, think ~Exp(2 s), 4,096 blocks
#   W3             agent loop, 10 steps, 4,096 blocks
#   W6             nothing shared (1,024-token prompts), 4,096 blocks
#   ladder         llm-d's shared-prefix synthetic: 150 groups x 5 questions,
#                  6,000 + 1,200 tokens, 1,000 output, 27,500 blocks (H100)
#   mooncake       the conversation trace under cache pressure: 4,096 blocks,
#                  prompts cut at 8,192 tokens
#   mooncake-h100  the conversation trace uncut on H100-sized caches (27,500
#                  blocks, the simulator's default for the 8B model), SLO
#                  TTFT 10 s
#
# Budget of one part (every run at most its arrival window, which holds the
# warm-up, plus its drain bound, plus 5 s of fleet start and stop; the search
# may stop before its last rate; `DRY_RUN=1` prints each part's plan and
# budget):
#   W1:      5 capacity x (23+10+5 s) + 2 x 21 runs x (23+10+5 s) = 1,786 s (29.8 min)
#   W2:      5 capacity x (15+28+5 s) + 2 x 16 runs x (15+28+5 s) = 1,776 s (29.6 min)
#   W3:      5 capacity x (15+28+5 s) + 2 x 16 runs x (15+28+5 s) = 1,776 s (29.6 min)
#   W6:      6 capacity x (30+10+5 s) + 2 x 16 runs x (30+10+5 s) = 1,710 s (28.5 min)
#   ladder:  4 capacity x (10+45+5 s) + 2 x 13 runs x (10+45+5 s) = 1,800 s (30.0 min)
#   mooncake, mooncake-h100:
#            5 capacity x (20+23+5 s) + 2 x 16 runs x (20+23+5 s) = 1,776 s (29.6 min)
# (a capacity count is every rate plus the confirmation; each rate the
# search steps down adds one run. The confirmation's run was paid for with
# shorter windows, by 2026-12-06's committed results where they bind
# least: W2's and W3's drains of 30 s and the trace's of 25 s held every
# answer within 22, 19 and 10 s of the arrivals' end; W1's window is a
# second shorter and the ladder's two, since their drains did bind.)
# All seven parts: 12,400 s, at most about 3.4 hours. The ladder's 1,000-token answers need a
# 45 s drain (1,000 tokens at up to ~40 ms each), which no shorter window
# offsets, so the ladder drops its 0.5x cell (the least loaded one) to stay
# within 30 minutes; every other part runs the whole matrix.
#
# Environment: WORKLOADS (parts, default all), REPETITIONS (2), POLICIES,
# PEERS, SWEEP_POLICIES, BIN, RESULTS (bench/results), REPORT (bench/report),
# DRY_RUN=1 (print the plans, run nothing).
set -eu
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/inferrail}
REPS=${REPETITIONS:-2}
RESULTS=${RESULTS:-bench/results}
REPORT=${REPORT:-bench/report}
POLICIES=${POLICIES:-round_robin,least_request,p2c,cost_model,sglang_cache_aware,dynamo_kv,llm_d}
PEERS=${PEERS:-sglang_cache_aware,dynamo_kv,llm_d}
SWEEP=${SWEEP_POLICIES:-round_robin,best_peer,cost_model}
TRACE=bench/traces/mooncake_conversation_trace.jsonl
DRY=""
if [ "${DRY_RUN:-}" = 1 ]; then DRY="--dry-run"; fi
if [ ! -x "$BIN" ]; then
	echo "bench: $BIN not found; run 'make build' first" >&2
	exit 1
fi
# compare PART LOADS FLAGS...: one part of the matrix into $RESULTS/PART,
# with the sweep at the load multiples LOADS.
compare() {
	part=$1
	loads=$2
	shift 2
	if [ -n "$DRY" ]; then
		echo "== $part"
		"$BIN" bench compare --dry-run --out "$RESULTS/$part" --report "" --replicas 4 --seed 1 --repetitions "$REPS" \
			--policies "$POLICIES" --peer-policies "$PEERS" --load-factors "$loads" --load-policies "$SWEEP" \
			--balancer-counts 4 --balancer-policies "$SWEEP" "$@"
		return
	fi
	# The part runs into a staging directory (ignored by git) and replaces
	# the committed one only when it is done: an interrupted part leaves
	# the committed results in place, and nothing committed is missing
	# from the work tree while a part runs. Each run is one gzip JSON,
	# <label>-rep<N>.json.gz (docs/bench.md, "How results are stored"), so
	# a rerun part holds no plain .json of the runs before.
	staging="$RESULTS/tmp/$part"
	rm -rf "${staging:?}"
	mkdir -p "$RESULTS/tmp"
	"$BIN" bench compare --out "$staging" --report "" --replicas 4 --seed 1 --repetitions "$REPS" \
		--policies "$POLICIES" --peer-policies "$PEERS" --load-factors "$loads" --load-policies "$SWEEP" \
		--balancer-counts 4 --balancer-policies "$SWEEP" "$@" ||
		echo "bench: some $part runs failed (see above); the report shows the others" >&2
	if [ -d "$staging" ]; then
		rm -rf "${RESULTS:?}/$part"
		mv "$staging" "$RESULTS/$part"
	fi
	rmdir "$RESULTS/tmp" 2>/dev/null || true
}
for w in ${WORKLOADS:-W1 W2 W3 W6 ladder mooncake mooncake-h100}; do
	case $w in
	W1)
		if [ -z "$DRY" ]; then
			bench/scripts/install-nginx.sh || echo "bench: nginx unavailable; the nginx baselines will fail and be skipped" >&2
		fi
		compare W1 0.5,1.5 --workload W1 --num-gpu-blocks 4096 --duration 23s --warmup 5s --drain 10s \
			--capacity-rates 36,48,60,72 \
			--policies prefix_hash,kv_aware --nginx round_robin,least_conn --oracle --balancer-policy cost_model
		;;
	W2)
		# Round robin stayed within the SLO at 20/s (p99 322 ms), the top
		# of the earlier ladder (8-20), so capacity was not reached.
		compare W2 0.5,1.5 --workload W2 --think 2s --num-gpu-blocks 4096 --duration 15s --warmup 5s --drain 28s \
			--capacity-rates 16,20,24,28
		;;
	W3)
		# Round robin stayed within the SLO at 8/s (p99 1.72 s) on 16de31a, the
		# top of the earlier ladder (2-8), so capacity was not reached.
		compare W3 0.5,1.5 --workload W3 --num-gpu-blocks 4096 --duration 15s --warmup 5s --drain 28s \
			--capacity-rates 4,6,8,10
		;;
	W6)
		# On a quiet machine round robin stayed within the SLO at 120/s
		# (the highest rate of the earlier ladder, 50-120), so capacity was
		# not reached; the ladder now brackets 120-150.
		compare W6 0.5,1.5 --workload W6 --num-gpu-blocks 4096 --duration 30s --warmup 5s --drain 10s \
			--capacity-rates 90,105,120,135,150
		;;
	ladder)
		# Round robin stayed within the SLO at 8/s, the top of the earlier
		# ladder (3-8), where every policy was all good; probed once on
		# 7b1c9b4 it was within at 16 (p99 456 ms) and beyond at 24 (96% good).
		# On e243085 it was within at 24, the top of 16-24 (p99 1.26 s), so
		# capacity was not reached; the ladder then bracketed 20-28. On
		# 644c422, the first part with the confirmed search, round robin
		# was beyond at 20 on seed 2 (two requests waited 36 s for
		# admission), the lowest rate, so the ladder is 16-24 again (three
		# rates, the part's budget, with 10 s windows).
		compare ladder 1.5 --workload ladder --num-gpu-blocks 27500 --duration 10s --warmup 3s --drain 45s \
			--capacity-rates 16,20,24
		;;
	mooncake)
		# Round robin was within its capacity up to 2x trace speed (no rate
		# tried was beyond it), so 1x was below capacity and each run held
		# about 80 requests: the search starts at 2x.
		compare mooncake 0.5,1.5 --workload mooncake --trace "$TRACE" --num-gpu-blocks 4096 --max-input-tokens 8192 \
			--duration 20s --warmup 5s --drain 23s --capacity-rates 2,3,4,6
		;;
	mooncake-h100)
		# Uncut, the trace's p99 prompt (~90K tokens in its first two
		# minutes) takes 7.3 s to prefill on an idle simulated H100, so no
		# routing meets a 2 s TTFT for 99% of requests: this part's SLO is
		# 10 s, about 1.25x that idle time, and measures queueing.
		compare mooncake-h100 0.5,1.5 --workload mooncake --trace "$TRACE" --num-gpu-blocks 27500 --max-input-tokens 0 \
			--slo-ttft 10s --duration 20s --warmup 5s --drain 23s --capacity-rates 0.5,1,1.5,2
		;;
	*)
		echo "bench: unknown part $w (W1 W2 W3 W6 ladder mooncake mooncake-h100)" >&2
		exit 2
		;;
	esac
done
if [ -n "$DRY" ]; then
	exit 0
fi
rm -rf "${REPORT:?}"
# The root README's headline table (between its bench-headline markers)
# follows the committed report only.
if [ "$REPORT" = bench/report ]; then
	"$BIN" bench report --results "$RESULTS" --out "$REPORT" --reproduce "make build && make bench" --readme README.md
else
	"$BIN" bench report --results "$RESULTS" --out "$REPORT" --reproduce "make build && make bench"
fi
