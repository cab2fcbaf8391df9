"""Per bench result file: its measured requests, how many missed the SLO by
their TTFT, how many by their TPOT alone, the median answer length of those
late by their TPOT alone, the engines' preemptions and the output tokens a
second. The SLO is the one the run was judged by (its config). Warm-up and
failed requests are left out.
Usage: python3 late.py RESULT.json[.gz]..."""
import statistics
import sys

from benchresult import read_result

if len(sys.argv) < 2:
    sys.exit(__doc__)
for path in sys.argv[1:]:
    r = read_result(path)
    slo = r["config"]["slo"]
    recs = [x for x in r["records"] if x["status"] == 200 and not x.get("warmup")]
    ttft = [x for x in recs if x["ttft_ns"] > slo["ttft"]]
    tpot = [x for x in recs if x["ttft_ns"] <= slo["ttft"] and x["tpot_ns"] > slo["tpot"]]
    answers = statistics.median(x["completion_tokens"] for x in tpot) if tpot else "-"
    print(f"{path}: {len(recs)} requests, late by TTFT {len(ttft)}, by TPOT alone {len(tpot)} "
          f"(median answer {answers} tokens), preemptions {r.get('engine_counters', {}).get('preemptions', '-')}, "
          f"output {r['summary']['output_tokens_per_s']:.0f} tokens/s")
