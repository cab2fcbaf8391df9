"""Per replica of a dev-fleet run (w2-decisions.sh's DIR): the requests it
took and the share of their prompt tokens found cached (run.json), beside
the share of its KV memory its running requests held (the engine's
kv_cache_usage as every logged decision saw it: median and mean over the
decisions after the warm-up). Usage: replica_memory.py DIR..."""
import collections
import glob
import json
import statistics
import sys

from benchresult import read_result

for d in sys.argv[1:]:
    recs = [r for r in read_result(d + "/run.json")["records"] if r["status"] == 200 and not r.get("warmup")]
    ids = {r["request_id"] for r in recs}
    use = collections.defaultdict(list)
    seen = set()
    for f in glob.glob(d + "/d-*.json"):
        for x in json.load(open(f))["decisions"]:
            if x["request_id"] not in ids or x["seq"] in seen:
                continue
            seen.add(x["seq"])
            for c in x["candidates"]:
                if "kv_usage" in c:
                    use[c["id"]].append(c["kv_usage"])
    print(d)
    for rep in sorted({r["replica"] for r in recs}):
        rr = [r for r in recs if r["replica"] == rep]
        u = use.get(rep, [0])
        print("  %s requests %d hit rate %.3f memory held by running requests: median %.2f mean %.2f" % (
            rep, len(rr), sum(r["cached_tokens"] for r in rr) / sum(r["prompt_tokens"] for r in rr),
            statistics.median(u), statistics.mean(u)))
