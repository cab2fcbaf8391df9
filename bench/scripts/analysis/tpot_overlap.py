"""For the measured answers of N output tokens (default 3) in each bench
result file: how many met the SLO's TPOT (100 ms) and how many did not, and
for each kind the median of the uncached prompt tokens other requests on the
same replica were prefilling (from their scheduled send to their first
token) while the answer decoded (from its first token to its last). Short
answers whose decode overlaps a long prefill get one long step between two
tokens, which is all their TPOT has.
With --detail, each answer outside lists the requests whose prefill its decode
overlapped: when each was sent after the answer was (ms), its uncached prompt
tokens and its TTFT, and whether the two were sent at one instant of the
trace (within 5 ms).
Usage: python3 tpot_overlap.py [--tokens N] [--detail] F...
e.g. F = the runs of a trace's part, bench/results/mooncake/*.json*"""
import statistics
import sys

from benchresult import read_result

args = sys.argv[1:]
tokens = 3
detail = False
while args[:1] in (["--tokens"], ["--detail"]):
    if args[0] == "--detail":
        detail, args = True, args[1:]
    else:
        tokens, args = int(args[1]), args[2:]

for path in args:
    recs = [r for r in read_result(path)["records"] if r["status"] == 200]
    by = {"outside": [], "within": []}
    for r in recs:
        if r.get("warmup") or r["completion_tokens"] != tokens:
            continue
        a, b = r["scheduled_ns"] + r["ttft_ns"], r["scheduled_ns"] + r["e2e_ns"]
        load, over = 0, []
        for o in recs:
            if o is r or o["replica"] != r["replica"]:
                continue
            p, q = o["scheduled_ns"], o["scheduled_ns"] + o["ttft_ns"]
            if p < b and q > a:
                load += o["prompt_tokens"] - o["cached_tokens"]
                over.append(o)
        outside = r["tpot_ns"] > 100e6
        by["outside" if outside else "within"].append(load)
        if detail and outside:
            print(f"{path}: {r['replica']} answer sent {r['scheduled_ns']/1e9:.3f} s, TTFT {r['ttft_ns']/1e6:.0f} ms, "
                  f"TPOT {r['tpot_ns']/1e6:.0f} ms, {r['prompt_tokens'] - r['cached_tokens']} uncached tokens")
            for o in over:
                dt = (o["scheduled_ns"] - r["scheduled_ns"]) / 1e6
                same = " (one instant)" if abs(dt) <= 5 else ""
                print(f"    prefill sent {dt:+.0f} ms{same}: {o['prompt_tokens'] - o['cached_tokens']} uncached tokens, "
                      f"TTFT {o['ttft_ns']/1e6:.0f} ms")
    parts = []
    for kind, loads in by.items():
        med = f"{statistics.median(loads):.0f}" if loads else "-"
        parts.append(f"{kind} TPOT {len(loads)} (prefill overlapped, median tokens {med})")
    print(f"{path}: " + ", ".join(parts))
