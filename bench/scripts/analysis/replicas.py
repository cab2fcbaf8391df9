"""Prints, per bench result file, each replica's measured requests, hit rate
(cached over prompt tokens) and TTFT p50 (ms), as requests/hit/p50, replicas
in name order. Warm-up and failed requests are left out.
Usage: replicas.py RESULT.json...
e.g. replicas.py bench/results/W2/sglang_cache_aware-rep*.json"""
import collections
import json
import sys

for path in sys.argv[1:]:
    by = collections.defaultdict(lambda: [0, 0, 0, []])
    for r in json.load(open(path))["records"]:
        if r.get("warmup") or r["status"] != 200:
            continue
        a = by[r["replica"]]
        a[0] += 1
        a[1] += r["prompt_tokens"]
        a[2] += r.get("cached_tokens", 0)
        a[3].append(r["ttft_ns"] / 1e6)
    cells = []
    for name in sorted(by):
        n, prompt, cached, ttfts = by[name]
        ttfts.sort()
        cells.append("%d/%.2f/%.0f" % (n, cached / prompt if prompt else 0, ttfts[len(ttfts) // 2]))
    print(path, " ".join(cells))
