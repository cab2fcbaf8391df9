"""For each replica of a decisions.sh run (ENGINES=1) at the given seconds of
the bench run: its requests in flight and waiting for admission (with their
prompt tokens), the mean output each has still to write, and the KV memory,
in tokens, its requests in flight free in the next half second and second,
from the engines' own logs of finished requests (arrival, queue, TTFT, end).
Usage: free_soon.py DIR T..."""
import datetime
import glob
import json
import sys

from benchresult import read_result

d, times = sys.argv[1], [float(t) for t in sys.argv[2:]]
recs = {r["request_id"]: r for r in read_result(f"{d}/run.json")["records"]}
reps, offset = {}, None
for f in sorted(glob.glob(f"{d}/requests-*.json")):
    i = int(f.rsplit("-", 1)[1].split(".")[0])
    reps[i] = []
    for r in json.load(open(f))["ranks"][0]["requests"]:
        a = datetime.datetime.fromisoformat(r["arrival"].replace("Z", "+00:00")).timestamp()
        base = r["id"].rsplit("-", 1)[0]
        if offset is None and base in recs:
            offset = a - recs[base]["scheduled_ns"] / 1e9
        reps[i].append((a, r))
for t in times:
    row = []
    for i, rs in sorted(reps.items()):
        flight, waiting, wtok, free05, free1, left = 0, 0, 0, 0, 0, []
        for a, r in rs:
            a -= offset
            admit, first, end = a + r["queue_ns"] / 1e9, a + r["ttft_ns"] / 1e9, a + r["e2e_ns"] / 1e9
            if not a <= t < end:
                continue
            flight += 1
            if t < admit:
                waiting += 1
                wtok += r["prompt_tokens"]
                continue
            size = r["prompt_tokens"] + r["output_tokens"]
            free05 += size if end <= t + 0.5 else 0
            free1 += size if end <= t + 1 else 0
            out = r["output_tokens"]
            left.append(out if t < first else out * (end - t) / max(end - first, 1e-9))
        mean = sum(left) / len(left) if left else 0
        row.append(f"replica-{i}: {flight} in flight, {waiting} waiting ({wtok} tokens), "
                   f"{mean:.0f} left to write, frees {free05} in 0.5 s, {free1} in 1 s")
    print(f"{t:6.2f} " + " | ".join(row))
