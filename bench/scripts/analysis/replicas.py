"""Per replica of bench result files: the measured requests it took, its hit
rate (cached over prompt tokens) and its TTFT p50 (ms). Warm-up and failed
requests are left out.
Usage: replicas.py RESULT.json[.gz]...
  prints per file requests/hit/p50 of each replica, in name order;
       replicas.py --by-load RESULT.json[.gz]...
  buckets every replica of every file by its requests (buckets of 50) and
  prints per bucket the number of replicas and their hit rates (min, max,
  mean);
       replicas.py --tail RESULT.json[.gz]...
  prints per file requests/TTFT p99 (ms)/tokens (prompt and answer) of each
  replica, and how far the most tokens exceed the fewest.
e.g. replicas.py bench/results/W2/sglang_cache_aware-rep*.json*
     replicas.py --by-load $(ls bench/results/W2/*.json* | grep -v -- -4b)"""
import collections
import sys

from benchresult import read_result


def replicas(path):
    """Returns {replica: [requests, prompt tokens, cached tokens, TTFTs ms,
    answer tokens]}."""
    by = collections.defaultdict(lambda: [0, 0, 0, [], 0])
    for r in read_result(path)["records"]:
        if r.get("warmup") or r["status"] != 200:
            continue
        a = by[r["replica"]]
        a[0] += 1
        a[1] += r["prompt_tokens"]
        a[2] += r.get("cached_tokens", 0)
        a[3].append(r["ttft_ns"] / 1e6)
        a[4] += r.get("completion_tokens", 0)
    return by


args = sys.argv[1:]
if args and args[0] == "--by-load":
    buckets = collections.defaultdict(list)
    for path in args[1:]:
        for n, prompt, cached, _, _ in replicas(path).values():
            if prompt:
                buckets[n // 50 * 50].append(cached / prompt)
    for b in sorted(buckets):
        hs = buckets[b]
        print("%d-%d requests: %d replicas, hit rate %.2f-%.2f, mean %.3f" % (
            b, b + 49, len(hs), min(hs), max(hs), sum(hs) / len(hs)))
elif args and args[0] == "--tail":
    for path in args[1:]:
        cells, tokens = [], []
        for name, (n, prompt, _, ttfts, answer) in sorted(replicas(path).items()):
            ttfts.sort()
            tokens.append(prompt + answer)
            cells.append("%d/%.0f/%d" % (n, ttfts[int(0.99 * (len(ttfts) - 1))], prompt + answer))
        spread = max(tokens) / min(tokens) - 1 if tokens and min(tokens) else 0
        print(path, " ".join(cells), "tokens spread %.1f%%" % (100 * spread))
else:
    for path in args:
        cells = []
        for name, (n, prompt, cached, ttfts, _) in sorted(replicas(path).items()):
            ttfts.sort()
            cells.append("%d/%.2f/%.0f" % (n, cached / prompt if prompt else 0, ttfts[len(ttfts) // 2]))
        print(path, " ".join(cells))
