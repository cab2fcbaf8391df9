"""Buckets every replica of every given result file by the measured requests
it took in the run (buckets of 50) and prints per bucket the number of
replicas and their hit rates (cached over prompt tokens): min, max, mean.
Warm-up and failed requests are left out.
Usage: hit_by_load.py RESULT.json...
e.g. the W2 part's one-balancer runs:
  hit_by_load.py $(ls bench/results/W2/*.json | grep -v -- -4b)"""
import collections
import json
import sys

buckets = collections.defaultdict(list)
for path in sys.argv[1:]:
    by = collections.defaultdict(lambda: [0, 0, 0])
    for r in json.load(open(path))["records"]:
        if r.get("warmup") or r["status"] != 200:
            continue
        a = by[r["replica"]]
        a[0] += 1
        a[1] += r["prompt_tokens"]
        a[2] += r.get("cached_tokens", 0)
    for n, prompt, cached in by.values():
        if prompt:
            buckets[n // 50 * 50].append(cached / prompt)
for b in sorted(buckets):
    hs = buckets[b]
    print("%d-%d requests: %d replicas, hit rate %.2f-%.2f, mean %.3f" % (b, b + 49, len(hs), min(hs), max(hs), sum(hs) / len(hs)))
