"""Matches a run's decision log to its requests in send order and reports
how well what each decision saw of its winner predicts the request's TTFT
(docs/routing-findings.md, "A prompt no replica holds goes round").
Usage: decisions_vs_ttft.py DIR, where DIR holds the GET /debug/decisions
answers as d-*.json and the run's records as run.json."""
import collections
import glob
import json
import statistics as st
import sys

from benchresult import read_result

d = sys.argv[1]
ds = {}
for f in sorted(glob.glob(d + "/d-*.json")):
    try:
        for x in json.load(open(f)).get("decisions") or []:
            ds[x["seq"]] = x
    except ValueError:
        continue
dec = [ds[s] for s in sorted(ds)]
rs = read_result(d + "/run.json")["records"]
rs.sort(key=lambda r: r["scheduled_ns"] + r["send_lag_ns"])
agree = [(x, r) for x, r in zip(dec, rs) if x["winner"] == r["replica"]]
print("decisions %d, requests %d, same replica in send order %.2f" % (len(dec), len(rs), len(agree) / min(len(dec), len(rs))))
pairs = [(x, r) for x, r in agree if not r.get("warmup")]
ttft = [r["ttft_ns"] / 1e6 for _, r in pairs]
won = [[c for c in x["candidates"] if c["id"] == x["winner"]][0] for x, _ in pairs]
for name, f in [("pending", lambda c: c["pending"]), ("estimated_ttft_ms", lambda c: c.get("estimated_ttft_ms", 0)),
                ("memory_wait_ms", lambda c: c.get("memory_wait_ms", 0)), ("kv_usage", lambda c: c.get("kv_usage", 0))]:
    print("correlation of the TTFT with the winner's %s: %.3f" % (name, st.correlation([f(c) for c in won], ttft)))
passed, why = 0, collections.Counter()
mem = []
for (x, _), w in zip(pairs, won):
    b = min(x["candidates"], key=lambda c: c["pending"])
    if b["pending"] <= w["pending"] - 3:
        passed += 1
        dm = b.get("memory_wait_ms", 0) - w.get("memory_wait_ms", 0)
        dq = b.get("queue_wait_ms", 0) - w.get("queue_wait_ms", 0)
        why["memory wait" if dm > dq else "queue wait"] += 1
        mem.append(dm)
print("decisions passing over a replica with 3 or more fewer pending: %.2f; higher there: %s; its extra memory wait, median %.0f ms" % (
    passed / len(pairs), dict(why), st.median(mem) if mem else 0))
