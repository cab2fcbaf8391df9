"""For the measured answers of N output tokens (default 3) in each bench
result file: how many met the SLO's TPOT (100 ms) and how many did not, and
for each kind the median of the uncached prompt tokens other requests on the
same replica were prefilling (from their scheduled send to their first
token) while the answer decoded (from its first token to its last). Short
answers whose decode overlaps a long prefill get one long step between two
tokens, which is all their TPOT has.
Usage: python3 tpot_overlap.py [--tokens N] F...
e.g. F = the runs of a trace's part, bench/results/mooncake/*.json"""
import json
import statistics
import sys

args = sys.argv[1:]
tokens = 3
if args[:1] == ["--tokens"]:
    tokens, args = int(args[1]), args[2:]

for path in args:
    recs = [r for r in json.load(open(path))["records"] if r["status"] == 200]
    by = {"outside": [], "within": []}
    for r in recs:
        if r.get("warmup") or r["completion_tokens"] != tokens:
            continue
        a, b = r["scheduled_ns"] + r["ttft_ns"], r["scheduled_ns"] + r["e2e_ns"]
        load = 0
        for o in recs:
            if o is r or o["replica"] != r["replica"]:
                continue
            p, q = o["scheduled_ns"], o["scheduled_ns"] + o["ttft_ns"]
            if p < b and q > a:
                load += o["prompt_tokens"] - o["cached_tokens"]
        by["outside" if r["tpot_ns"] > 100e6 else "within"].append(load)
    parts = []
    for kind, loads in by.items():
        med = f"{statistics.median(loads):.0f}" if loads else "-"
        parts.append(f"{kind} TPOT {len(loads)} (prefill overlapped, median tokens {med})")
    print(f"{path}: " + ", ".join(parts))
