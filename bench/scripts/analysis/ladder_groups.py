"""Splits a shared-prefix run's requests by whether their group's prompt had
been sent before in the run (warm-up included), and those that had by where
they went: to a replica an earlier request of the group went to ("home") or
not ("away"); prints per file the counts, the share of each kind's prompt
tokens cached and the run's hit rate (ladder_aways.py lists the away
requests with their decisions). Needs the groups printed by
`go run ./bench/scripts/analysis/groups` on the same files.
Usage: go run ./bench/scripts/analysis/groups F... | python3 ladder_groups.py F...
e.g. for the ladder's 4-balancer cell, F = bench/results/ladder/cost_model-4b-rep*.json*"""
import collections
import sys

from benchresult import read_result

groups = collections.defaultdict(dict)
for line in sys.stdin:
    path, session, turn, group = line.rstrip("\n").split("\t")
    groups[path][(int(session), int(turn))] = int(group)

for path in sys.argv[1:]:
    recs = read_result(path)["records"]
    recs.sort(key=lambda r: r["scheduled_ns"])
    homes = collections.defaultdict(set)  # group -> replicas it went to
    kinds = collections.defaultdict(lambda: [0, 0, 0])  # count, prompt, cached
    for r in recs:
        if r["status"] != 200:
            continue
        g = groups[path][(r["session"], r["turn"])]
        seen = homes[g]
        rep = r["replica"]
        kind = "first" if not seen else ("home" if rep in seen else "away")
        seen.add(rep)
        if r.get("warmup"):
            continue
        k = kinds[kind]
        k[0] += 1
        k[1] += r["prompt_tokens"]
        k[2] += r.get("cached_tokens", 0)
    total = [sum(k[i] for k in kinds.values()) for i in range(3)]
    print(path)
    for kind in ("first", "home", "away"):
        n, p, c = kinds[kind]
        print("  %-5s %4d requests, %.3f of their prompt tokens cached, %.3f of all cached" %
              (kind, n, c / p if p else 0, c / total[1] if total[1] else 0))
    print("  hit rate %.3f" % (total[2] / total[1]))
