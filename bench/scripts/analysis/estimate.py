"""Reads the per-request records of bench result files and prints, per file,
how the balancer's estimate (its Server-Timing: estimated_ttft_ns and the
wait for KV memory in it, estimated_memory_wait_ns; cost_model only) held
against the engine's own TTFT (engine_ttft_ns, from the request's arrival
at the simulator to its first token): the ratio engine / estimate at its
median and 90th percentile and the median times, for every measured
answered request and split by what the estimate held (no wait for memory,
a wait for memory) and by whether the prediction of cached tokens was exact
(predicted_cached against the engine's cached_tokens); beside them the
engine's own queue before admission (engine_queue_ns) against the
estimated queue and memory waits, and the share of requests the engine
preempted (engine_preemptions). Warm-up requests,
failed ones and those without both times are left out.
Usage: estimate.py RESULT.json[.gz]...
e.g. estimate.py bench/results/W3/cost_model-rep*.json*"""
import statistics
import sys

from benchresult import read_result


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def line(name, rows):
    if not rows:
        return f"  {name:<28} n 0"
    ratio = [r["engine"] / r["est"] for r in rows]
    med = lambda k: statistics.median(r[k] for r in rows)
    preempted = sum(1 for r in rows if r["preempted"]) / len(rows)
    return (f"  {name:<28} n {len(rows):5d}  engine/estimate p50 {pct(ratio, .5):5.2f} p90 {pct(ratio, .9):5.2f}"
            f"  medians: engine {med('engine'):7.1f} ms (queued {med('queue'):7.1f}), estimate {med('est'):7.1f}"
            f" (queue {med('qwait'):6.1f}, memory {med('mem'):6.1f}); preempted {100 * preempted:4.1f}%")


for path in sys.argv[1:]:
    recs = read_result(path)["records"]
    rows = []
    for r in recs:
        if r.get("warmup") or r.get("status") != 200 or not r.get("engine_ttft_ns") or not r.get("estimated_ttft_ns"):
            continue
        rows.append({
            "engine": r["engine_ttft_ns"] / 1e6,
            "est": r["estimated_ttft_ns"] / 1e6,
            "mem": r.get("estimated_memory_wait_ns", 0) / 1e6,
            "qwait": r.get("estimated_queue_wait_ns", 0) / 1e6,
            "queue": r.get("engine_queue_ns", 0) / 1e6,
            "preempted": r.get("engine_preemptions", 0) > 0,
            "exact": r.get("predicted_cached", 0) == r.get("cached_tokens", 0),
            "over": r.get("predicted_cached", 0) > r.get("cached_tokens", 0),
        })
    print(path)
    print(line("all", rows))
    print(line("no wait for memory", [r for r in rows if r["mem"] == 0]))
    print(line("a wait for memory", [r for r in rows if r["mem"] > 0]))
    print(line("cached tokens as predicted", [r for r in rows if r["exact"]]))
    print(line("fewer cached than predicted", [r for r in rows if r["over"]]))
    slow = sorted(rows, key=lambda r: r["engine"])[-max(1, len(rows) // 100):]
    print(line("the slowest 1% at the engine", slow))
