"""Lists, for runs that decisions.sh left in DIRs, cost_model's hot-prefix
moves (reason hot_prefix_replica, docs/routing.md): each move's decision
number, how far its pick's estimated TTFT was above the lowest candidate's,
the highest queue wait any candidate had (the queue trigger needs
hot_prefix_queue_wait, 500 ms, on the best), the request's turn, and the
first and later turns the run had sent before it, with the run's TTFT
p50/p99 (its summary: the measured requests). A move above the lowest by more than a
few ms, with no queue near the trigger and no later turns sent, is the
memory trigger paying for contexts nobody comes back to.
Usage: python3 hot_moves.py DIR..."""
import glob
import json
import sys

from benchresult import read_result

for d in sys.argv[1:]:
    dec = {}
    for f in glob.glob(d + "/d-*.json"):
        try:
            for x in json.load(open(f))["decisions"]:
                dec[x["seq"]] = x
        except (ValueError, KeyError):
            continue  # a read cut by the fleet's end
    run = read_result(d + "/run.json")
    by_id = {r["request_id"]: r for r in run["records"]}
    ttft = run["summary"]["ttft"]
    first = later = 0
    moves = []
    for seq in sorted(dec):
        x = dec[seq]
        r = by_id.get(x["request_id"], {})
        if x["reason"] == "hot_prefix_replica":
            lowest = min(c.get("estimated_ttft_ms", 1e9) for c in x["candidates"])
            queue = max(c.get("queue_wait_ms", 0) for c in x["candidates"])
            moves.append("%d: +%.0f ms (queue %.0f, turn %s, %d/%d)" % (
                seq, x["estimated_ttft_ms"] - lowest, queue, r.get("turn", "?"), first, later))
        if r.get("turn") == 0:
            first += 1
        elif r:
            later += 1
    print("%s: %d decisions, %d moves, TTFT p50 %.0f p99 %.0f ms" % (d, len(dec), len(moves), ttft["p50_ms"], ttft["p99_ms"]))
    for m in moves:
        print("  " + m)
