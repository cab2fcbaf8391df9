"""Reads the per-request records of bench result files and prints, per file,
how evenly each replica's requests arrived: the coefficient of variation of
the gaps between one replica's successive requests (the mean over replicas),
by the client's schedule (scheduled_ns: what the routing made of the
arrivals) and by the arrival at the engine (engine_arrival_ns: what the way
there made of it), the most requests one replica got within 50 ms, and the
way from the schedule to the engine (p50 and p99, ms). Round robin over a
Poisson stream gives about 0.5 by the schedule on four replicas; the
requests of several balancers each taking its own turn meet and bunch
(docs/routing-findings.md). Warm-up requests, failed ones and those without an
engine arrival are left out.
Usage: arrivals.py RESULT.json[.gz]...
e.g. arrivals.py bench/results/W6/cost_model-rep*.json* bench/results/W6/cost_model-4b-rep*.json*"""
import collections
import statistics
import sys

from benchresult import read_result


def cv(times):
    times = sorted(times)
    gaps = [b - a for a, b in zip(times, times[1:])]
    return statistics.pstdev(gaps) / statistics.mean(gaps) if len(gaps) > 1 and statistics.mean(gaps) > 0 else float("nan")


def most_within(times, window):
    times = sorted(times)
    j = best = 0
    for i, t in enumerate(times):
        while t - times[j] > window:
            j += 1
        best = max(best, i - j + 1)
    return best


for path in sys.argv[1:]:
    recs = [r for r in read_result(path)["records"]
            if not r.get("warmup") and r.get("status") == 200 and r.get("engine_arrival_ns")]
    sched, arrival = collections.defaultdict(list), collections.defaultdict(list)
    for r in recs:
        sched[r["replica"]].append(r["scheduled_ns"] / 1e6)
        arrival[r["replica"]].append(r["engine_arrival_ns"] / 1e6)
    way = sorted((r["engine_arrival_ns"] - r["scheduled_ns"]) / 1e6 for r in recs)
    if not way:
        print(path, "no records with the engines' arrivals")
        continue
    p = lambda q: way[min(len(way) - 1, int(q * len(way)))]
    print(f"{path}: gaps' variation by the schedule {statistics.mean(cv(v) for v in sched.values()):.2f}, "
          f"at the engines {statistics.mean(cv(v) for v in arrival.values()):.2f}; "
          f"most within 50 ms {[most_within(arrival[k], 50) for k in sorted(arrival)]}; "
          f"schedule to engine p50 {p(.5):.1f} ms, p99 {p(.99):.1f} ms")
