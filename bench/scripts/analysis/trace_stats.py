"""Describes a Mooncake-format trace (one JSON object a line: timestamp in ms,
input_length, output_length, hash_ids of 512-token blocks): its requests,
first and last timestamp and arrival slots, prompt and answer lengths, how
many prompts exceed a cut, and its largest prefix groups (requests sharing
their first two blocks) with their answer lengths.
Usage: python3 trace_stats.py TRACE [--cut 8192] [--groups 3]"""
import collections
import hashlib
import json
import statistics
import sys

args = sys.argv[1:]
path, cut, top = args[0], 8192, 3
if "--cut" in args:
    cut = int(args[args.index("--cut") + 1])
if "--groups" in args:
    top = int(args[args.index("--groups") + 1])

raw = open(path, "rb").read()
recs = [json.loads(line) for line in raw.splitlines() if line.strip()]
ins = [r["input_length"] for r in recs]
outs = [r["output_length"] for r in recs]
print(f"{path}: sha256 {hashlib.sha256(raw).hexdigest()}")
print(f"{len(recs)} requests, timestamps {recs[0]['timestamp']} to {recs[-1]['timestamp']} ms, "
      f"{len({r['timestamp'] for r in recs})} arrival slots")
print(f"prompts: mean {statistics.mean(ins):.0f}, median {statistics.median(ins):.0f}, max {max(ins)} tokens; "
      f"{sum(1 for n in ins if n > cut)} over {cut}")
print(f"answers: mean {statistics.mean(outs):.0f}, median {statistics.median(outs):.0f} tokens")
groups = collections.defaultdict(list)
for r in recs:
    groups[tuple(r["hash_ids"][:2])].append(r)
for key, rs in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:top]:
    shared = len(rs[0]["hash_ids"])
    for r in rs[1:]:
        h = r["hash_ids"]
        shared = next((i for i in range(min(shared, len(h))) if h[i] != rs[0]["hash_ids"][i]), min(shared, len(h)))
    o = [r["output_length"] for r in rs]
    print(f"group {key}: {len(rs)} requests sharing {shared} blocks ({shared * 512} tokens); answers median "
          f"{statistics.median(o):.0f}, {sum(1 for x in o if x <= 3)} of at most 3 tokens, "
          f"{sum(1 for x in o if x <= 50)} of at most 50")
