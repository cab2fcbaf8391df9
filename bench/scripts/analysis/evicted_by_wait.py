"""Prints, for each result file, how often cost_model's prediction of a
request's cached tokens claimed more than the engine found, by how long the
request waited at the engine before it was scheduled (engine_queue_ns):
under 10 ms, 10-100 ms, 100-500 ms, 500 ms or more. A context predicted
whole but evicted while its request queued shows as a claim that grows with
the wait (docs/routing-findings.md, "Evicted before admission").
Warm-up requests and those without both a prediction and the engine's
cached tokens are left out.
Usage: evicted_by_wait.py RESULT...  (gzip or plain JSON, as bench writes)"""
import collections
import sys

from benchresult import read_result

EDGES = [10, 100, 500]
NAMES = ["<10ms", "10-100ms", "100-500ms", ">=500ms"]

for path in sys.argv[1:]:
    recs = [r for r in read_result(path)["records"]
            if not r.get("warmup") and r.get("predicted_reported") and r.get("cached_reported")]
    by = collections.defaultdict(lambda: [0, 0, 0])  # requests, over-claimed, tokens over
    for r in recs:
        wait_ms = r.get("engine_queue_ns", 0) / 1e6
        b = by[sum(wait_ms >= e for e in EDGES)]
        b[0] += 1
        if r["predicted_cached"] > r["cached_tokens"]:
            b[1] += 1
            b[2] += r["predicted_cached"] - r["cached_tokens"]
    cells = []
    for k in sorted(by):
        n, over, tokens = by[k]
        mean = tokens / over if over else 0
        cells.append(f"{NAMES[k]} {over}/{n} = {over / n:.2f} (mean {mean:.0f} tokens)")
    print(path + ": " + "; ".join(cells))
