"""Reads the per-request records of bench result files and prints, per file:
requests per replica, first turns (new conversations) per replica, later
turns that recomputed more than 1,000 prompt tokens (their context was
evicted) per replica, and turns sent to another replica than the session's
previous turn (moves), and the share of prompt tokens cached by turn
(turns 5 and later together). Warm-up requests and failed ones are left out.
Usage: sessions.py RESULT.json[.gz]...
e.g. sessions.py bench/results/W3/cost_model_at_0.5x-rep*.json*"""
import collections
import sys

from benchresult import read_result

for path in sys.argv[1:]:
    recs = read_result(path)["records"]
    turns = collections.defaultdict(dict)
    for r in recs:
        turns[r["session"]][r["turn"]] = r
    reqs, first, recomputed = (collections.Counter() for _ in range(3))
    moves = 0
    by_turn = collections.defaultdict(lambda: [0, 0])  # prompt tokens, cached
    for r in recs:
        if r.get("warmup") or r["status"] != 200:
            continue
        rep, t = r["replica"], r["turn"]
        reqs[rep] += 1
        b = by_turn[min(t, 5)]
        b[0] += r["prompt_tokens"]
        b[1] += r.get("cached_tokens", 0)
        if t == 0:
            first[rep] += 1
            continue
        if r["prompt_tokens"] - r.get("cached_tokens", 0) > 1000:
            recomputed[rep] += 1
        prev = turns[r["session"]].get(t - 1)
        if prev is not None and prev["replica"] != rep:
            moves += 1
    print(path)
    print("  requests  ", dict(sorted(reqs.items())))
    print("  first turns", dict(sorted(first.items())))
    print("  recomputed ", dict(sorted(recomputed.items())), "total", sum(recomputed.values()))
    print("  moves      ", moves)
    print("  cached share by turn", ", ".join("%d: %.2f" % (k, c / p) for k, (p, c) in sorted(by_turn.items()) if p))
