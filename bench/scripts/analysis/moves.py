"""Counts, for runs of conversations (W2, W3), the later turns that went to
their previous turn's replica (home) and those that went elsewhere, with the
share of their prompt tokens each found cached. With --decisions DIR (the
balancer's d-PORT-TIME.json reads of /debug/decisions, as w2-decisions.sh
leaves them), also why each went where it did: the balancer's reason and
whether home was predicted to hold more of the prompt than every other
replica; how many decisions had every candidate predict the same cached
tokens; for the first turns, on how many replicas the most any was predicted
to hold was predicted; and how many turns found cached what their chosen
replica was predicted to hold of the first 512 tokens (W2's system prompt).
Usage: moves.py [--decisions DIR] RESULT.json[.gz]..."""
import argparse
import collections
import glob
import json

from benchresult import read_result

ap = argparse.ArgumentParser()
ap.add_argument("--decisions")
ap.add_argument("results", nargs="+")
a = ap.parse_args()
decisions = {}
if a.decisions:
    for f in glob.glob(a.decisions + "/d-*.json"):
        for x in json.load(open(f))["decisions"]:
            decisions[x["request_id"]] = x
for path in a.results:
    recs = sorted((r for r in read_result(path)["records"] if r["status"] == 200),
                  key=lambda r: (r["session"], r["turn"]))
    prev = {}
    kinds = collections.Counter()
    hits = collections.defaultdict(lambda: [0, 0, 0])
    for r in recs:
        home = prev.get(r["session"])
        prev[r["session"]] = r["replica"]
        if home is None or r.get("warmup"):
            continue
        k = "home" if home == r["replica"] else "moved"
        h = hits[k]
        h[0] += 1
        h[1] += r["cached_tokens"]
        h[2] += r["prompt_tokens"]
        x = decisions.get(r["request_id"])
        if x is None:
            continue
        c = {y["id"]: y.get("predicted_cached_tokens", 0) for y in x["candidates"]}
        rest = max((v for i, v in c.items() if i != home), default=0)
        kinds[(k, x["reason"], "home holds more" if c.get(home, 0) > rest else "home holds no more")] += 1
    print(path, " ".join("%s %d (hit rate %.3f)" % (k, v[0], v[1] / v[2]) for k, v in sorted(hits.items())))
    if decisions:
        same, firsts, agree, joined = 0, collections.Counter(), collections.Counter(), 0
        for r in recs:
            x = decisions.get(r["request_id"])
            if x is None:
                continue
            joined += 1
            c = [y.get("predicted_cached_tokens", 0) for y in x["candidates"]]
            same += max(c) == min(c)
            if r["turn"] == 0:
                firsts[sum(v == max(c) for v in c) if max(c) > 0 else 0] += 1
            w = next(y for y in x["candidates"] if y["id"] == r["replica"]).get("predicted_cached_tokens", 0)
            agree[(w >= 512, r["cached_tokens"] >= 512)] += 1
        print(" decisions with every candidate predicting the same: %d of %d" % (same, joined))
        print(" first turns by replicas predicted to hold the most (0: none holds any):",
              dict(sorted(firsts.items())))
        print(" predicted to hold 512 / found 512:", {"%s/%s" % k: v for k, v in sorted(agree.items())})
    for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print("", n, *k, sep="\t")
