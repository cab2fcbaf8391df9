"""Joins a run's decision log with its records (by request id) and prints
where cost_model's predicted cache hits were lost at the engine
(docs/routing-findings.md, "Predicted hits at risk"):
  - the picks predicted to hold half the prompt or more, by whether the
    winner was short of KV memory (a wait for memory estimated, or short
    with none) and by its queue wait (under or over 100 ms): how many, the
    share of their predicted tokens the engine did not have, and how many
    lost more than half;
  - of the short picks whose own context (beyond what every candidate held)
    was 256 tokens or more, how many lost all of it, split by whether the
    uncached prompt tokens queued there (prefill_tokens) needed at least
    the memory its report showed free;
  - the later turns of a conversation that went to another replica than the
    turn before (and of them, those whose previous replica was predicted to
    hold less than half the prompt), and how many predicted tokens the
    previous replica held beyond the winner (given up).
The share of prompt tokens cached by turn is sessions.py's. Warm-up
requests and failed ones are left out.
Usage: hits_at_risk.py DIR BLOCKS, where DIR holds the GET /debug/decisions
answers as d*.json and the run's records as run.json, and BLOCKS is each
replica's KV capacity in blocks of 16 tokens."""
import collections
import glob
import json
import sys

from benchresult import read_result

d, capacity = sys.argv[1], int(sys.argv[2]) * 16
dec = {}
for f in glob.glob(d + "/d*.json"):
    try:
        for x in json.load(open(f)).get("decisions") or []:
            if x.get("attempt", 1) == 1:
                dec[x["request_id"]] = x
    except ValueError:
        continue
recs = [r for r in read_result(d + "/run.json")["records"] if r.get("status") == 200]


def winner(x):
    return [c for c in x["candidates"] if c["id"] == x["winner"]][0]


def short(c):
    return (c.get("memory_wait_ms") or 0) > 0 or c.get("kv_short")


groups = collections.defaultdict(lambda: [0, 0, 0, 0])  # picks, predicted, lost, lost > half
risk = collections.defaultdict(lambda: [0, 0])  # picks, lost all
for r in recs:
    x = dec.get(r["request_id"])
    if r.get("warmup") or x is None:
        continue
    w, pc, ac = winner(x), x["predicted_cached_tokens"], r["cached_tokens"]
    if pc >= 0.5 * r["prompt_tokens"]:
        g = groups[("memory short" if short(w) else "memory not short",
                    "queue wait under 100 ms" if (w.get("queue_wait_ms") or 0) < 100 else "queue wait 100 ms or more")]
        g[0] += 1; g[1] += pc; g[2] += max(pc - ac, 0); g[3] += ac < 0.5 * pc
    common = min((c.get("predicted_cached_tokens") or 0) for c in x["candidates"])
    if short(w) and pc - common >= 256:
        free = capacity * (1 - (w.get("kv_usage") or 0))
        k = "queue needs the free memory" if (w.get("prefill_tokens") or 0) >= free else "queue needs less than the free memory"
        risk[k][0] += 1
        risk[k][1] += max(pc - ac, 0) >= pc - common
for (mem, q), g in sorted(groups.items()):
    print("%-17s %-26s picks %4d  predicted tokens lost %5.1f%%  lost more than half %3d" % (mem, q, g[0], 100 * g[2] / g[1], g[3]))
for k, v in sorted(risk.items()):
    print("short, own context cached, %-38s %3d picks, %3d lost all of it" % (k + ":", v[0], v[1]))

turns = collections.defaultdict(dict)
for r in recs:
    turns[r["session"]][r["turn"]] = r
later = moved = cold = given_up = 0
for t in turns.values():
    for k in sorted(t):
        if k == 0 or k - 1 not in t or t[k].get("warmup") or t[k]["request_id"] not in dec:
            continue
        x = dec[t[k]["request_id"]]
        home = {c["id"]: c for c in x["candidates"]}.get(t[k - 1]["replica"])
        if home is None:
            continue
        later += 1
        if x["winner"] != home["id"]:
            moved += 1
            cold += (home.get("predicted_cached_tokens") or 0) < 0.5 * t[k]["prompt_tokens"]
            given_up += max((home.get("predicted_cached_tokens") or 0) - x["predicted_cached_tokens"], 0)
print("later turns %d, moved to another replica %d (%d from one predicted to hold less than half the prompt), "
      "predicted tokens given up by the moves %d" % (later, moved, cold, given_up))
