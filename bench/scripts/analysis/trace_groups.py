"""Per prefix group of a trace run (the group is the request's first hash id,
bench.TraceSessions): how many measured requests, over how many replicas
and how they split, the share of their prompt tokens cached, and their TTFT
p50 and p99; groups with fewer than MIN requests in every file are pooled as
"rest". Needs the groups printed by `go run ./bench/scripts/analysis/groups`
on the same files.
With --long T it also prints, per replica, the requests with more than T
uncached prompt tokens (the long prefills).
Usage: go run ./bench/scripts/analysis/groups F... | python3 trace_groups.py [--min N] [--long T] F...
e.g. F = /tmp/ta/m1/cost_model-rep0.json.gz /tmp/ta/m1/round_robin-rep0.json.gz"""
import collections
import os
import sys

from benchresult import read_result

args = sys.argv[1:]
least, longer = 50, 0
while args[:1] in (["--min"], ["--long"]):
    if args[0] == "--min":
        least = int(args[1])
    else:
        longer = int(args[1])
    args = args[2:]

groups = collections.defaultdict(dict)
for line in sys.stdin:
    path, session, turn, group = line.rstrip("\n").split("\t")
    groups[path][(int(session), int(turn))] = int(group)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


runs = {}
big = set()
for path in args:
    by = collections.defaultdict(list)
    for r in read_result(path)["records"]:
        if r.get("warmup") or r["status"] != 200:
            continue
        by[groups[path][(r["session"], r["turn"])]].append(r)
    runs[path] = by
    big |= {g for g, rs in by.items() if len(rs) >= least}

for path, by in runs.items():
    pooled = collections.defaultdict(list)
    for g, rs in by.items():
        pooled[g if g in big else "rest"].extend(rs)
    print(os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path))
    for g in sorted(pooled, key=lambda g: (g == "rest", str(g))):
        rs = pooled[g]
        split = collections.Counter(r["replica"] for r in rs)
        prompt = sum(r["prompt_tokens"] for r in rs)
        cached = sum(r["cached_tokens"] for r in rs)
        ttft = [r["ttft_ns"] / 1e6 for r in rs]
        shares = "/".join(str(split[k]) for k in sorted(split))
        print(f"  group {g!s:>6}: {len(rs):4d} requests on {len(split)} replicas ({shares}), "
              f"cached {cached / max(prompt, 1):.3f}, TTFT p50 {pct(ttft, 0.5):6.0f} p99 {pct(ttft, 0.99):6.0f} ms")
    if longer:
        long = collections.Counter(r["replica"] for rs in by.values() for r in rs
                                   if r["prompt_tokens"] - r["cached_tokens"] > longer)
        print(f"  over {longer} uncached tokens: " + ", ".join(f"{k} {long[k]}" for k in sorted(long)))
