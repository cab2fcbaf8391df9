"""Prints each request of a shared-prefix run that went away from every
replica its group's earlier requests went to, with the decision that sent
it: the balancer's reason and, per candidate, the predicted cached tokens,
the estimated TTFT (ms), the requests pending and their prefill tokens.
Usage: ladder_aways.py DIR (DIR holds run.json, g.tsv from
`go run ./bench/scripts/analysis/groups DIR/run.json` and the balancers'
d-PORT-TIME.json reads of /debug/decisions)"""
import collections
import glob
import json
import sys

from benchresult import read_result

d = sys.argv[1]
groups = {}
for line in open(d + "/g.tsv"):
    _, s, t, g = line.rstrip("\n").split("\t")
    groups[(int(s), int(t))] = int(g)
decisions = {}
for f in glob.glob(d + "/d-*.json"):
    port = f.rsplit("/d-", 1)[1].split("-")[0]
    for x in json.load(open(f))["decisions"]:
        decisions[x["request_id"]] = (port, x)
recs = sorted(read_result(d + "/run.json")["records"], key=lambda r: r["scheduled_ns"])
before = collections.defaultdict(list)
n = 0
for r in recs:
    g = groups[(r["session"], r["turn"])]
    h = before[g]
    if h and r["replica"] not in {x["replica"] for x in h}:
        n += 1
        print("t=%.2fs group %d -> %s%s; earlier: %s" % (
            r["scheduled_ns"] / 1e9, g, r["replica"], " (warm-up)" if r.get("warmup") else "",
            ", ".join("%s at %.2fs" % (x["replica"], x["scheduled_ns"] / 1e9) for x in h)))
        port, x = decisions.get(r["request_id"], ("?", None))
        if x:
            print("  balancer %s %s: %s" % (port, x["reason"], "; ".join(
                "%s cached %d est %d ms pending %d (%d tokens)" % (
                    c["id"], c.get("predicted_cached_tokens", 0), round(c["estimated_ttft_ms"]),
                    c["pending"], c["prefill_tokens"]) for c in x["candidates"])))
    h.append(r)
print("away %d" % n)
