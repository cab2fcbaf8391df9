"""For each bench result file: of the measured answers of N output tokens
(default 3), how many requests with at least T uncached prompt tokens
(default 5,000) were sent within W ms after one of them (default 200), and
how many of those went to the same replica. A long prefill sent just after a
short answer to its replica lands in the answer's two or three decode steps
(docs/bench-findings.md, the tool-and-agent trace); sent to another replica,
or before it, it does not.
Usage: python3 long_after_short.py [--tokens N] [--long T] [--within W] F..."""
import sys

from benchresult import read_result

args = sys.argv[1:]
opts = {"--tokens": 3, "--long": 5000, "--within": 200}
while args[:1] and args[0] in opts:
    opts[args[0]], args = int(args[1]), args[2:]
if not args:
    sys.exit(__doc__)

for path in args:
    recs = [r for r in read_result(path)["records"] if r["status"] == 200]
    shorts = [r for r in recs if r["completion_tokens"] == opts["--tokens"] and not r.get("warmup")]
    longs = [r for r in recs if r["prompt_tokens"] - r["cached_tokens"] >= opts["--long"]]
    near = same = 0
    for s in shorts:
        for l in longs:
            if 0 <= l["scheduled_ns"] - s["scheduled_ns"] <= opts["--within"] * 1e6:
                near += 1
                same += l["replica"] == s["replica"]
    print(f"{path}: {len(shorts)} answers of {opts['--tokens']} tokens; long prefills sent within "
          f"{opts['--within']} ms after one: {near}, to its replica: {same}")
