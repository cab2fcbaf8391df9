"""Compares each decision's view of a candidate's requests before their first
token (its pending count) with the engine's own count, sampled by
poll_engines.py: a view is true when it lies between the two samples around
the decision. Prints how many views were true, above and below by 2 or more.
Usage: view_vs_engine.py DIR ENGINE_PORTS
(DIR holds eng.jsonl and the balancers' d-PORT-TIME.json reads of
/debug/decisions; ENGINE_PORTS lists replica-0's engine port first, comma-
separated)"""
import bisect
import datetime
import glob
import json
import sys

d, ports = sys.argv[1], sys.argv[2].split(",")
engine = {"replica-%d" % i: p for i, p in enumerate(ports)}
rows = [json.loads(l) for l in open(d + "/eng.jsonl")]
ts = [r["t"] for r in rows]
decisions = {}
for f in glob.glob(d + "/d-*.json"):
    for x in json.load(open(f))["decisions"]:
        decisions[(x["request_id"], x["attempt"])] = x
errs = []
for x in decisions.values():
    t = datetime.datetime.fromisoformat(x["time"].replace("Z", "+00:00")).timestamp()
    i = bisect.bisect_left(ts, t)
    if i == 0 or i >= len(ts):
        continue
    for c in x["candidates"]:
        p = engine[c["id"]]
        a, b = rows[i - 1][p]["BeforeFirstToken"], rows[i][p]["BeforeFirstToken"]
        lo, hi, v = min(a, b), max(a, b), c["pending"]
        errs.append(0 if lo <= v <= hi else (v - hi if v > hi else v - lo))
n = len(errs)
print("candidate views %d (decisions within the engine samples)" % n)
print("true %.3f, above by 2 or more %.3f, below by 2 or more %.3f" % (
    sum(e == 0 for e in errs) / n, sum(e >= 2 for e in errs) / n, sum(e <= -2 for e in errs) / n))
