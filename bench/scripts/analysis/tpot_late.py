"""For each answer late by its TPOT alone (first token within the SLO, mean
gap past it) in each bench result file: the long prefills (at least --long
uncached prompt tokens, default 2,000) its decode overlapped on its replica,
split by whether they were sent before the answer or after it; and, for each
one sent after, how many of the other replicas were then streaming or
prefilling a short answer (at most --short output tokens, default 20) of
their own, so that a prompt sent there would have landed in a short answer's
gaps too. A late answer whose stalling prefills were all sent before it
could not have been spared by where those prompts went once it existed (the
TPOT guard, docs/routing.md#the-tpot-guard, only moves prompts that come
after); one stalled by a prompt sent after it while another replica had no
short answer could have been.
Times are from each record's scheduled send plus its send lag.
Usage: python3 tpot_late.py [--long N] [--short N] F..."""
import sys

from benchresult import read_result

args = sys.argv[1:]
long_tokens, short = 2000, 20
while args[:1] in (["--long"], ["--short"]):
    if args[0] == "--long":
        long_tokens, args = int(args[1]), args[2:]
    else:
        short, args = int(args[1]), args[2:]
if not args:
    sys.exit(__doc__)

for path in args:
    r = read_result(path)
    slo = r["config"]["slo"]
    recs = [x for x in r["records"] if x["status"] == 200]
    for x in recs:
        x["sent"] = x["scheduled_ns"] + x.get("send_lag_ns", 0)
        x["first"] = x["sent"] + x["ttft_ns"]
        x["end"] = x["sent"] + x["e2e_ns"]
        x["uncached"] = x["prompt_tokens"] - x.get("cached_tokens", 0)
    replicas = sorted({x["replica"] for x in recs})
    late = [x for x in recs if not x.get("warmup") and x["ttft_ns"] <= slo["ttft"] and x["tpot_ns"] > slo["tpot"]]
    before_only = after_spareable = after_unspareable = none = 0
    for a in late:
        stalls = [y for y in recs if y is not a and y["replica"] == a["replica"] and y["uncached"] >= long_tokens
                  and y["sent"] < a["end"] and y["first"] > a["first"]]
        after = [y for y in stalls if y["sent"] > a["sent"]]
        if not stalls:
            none += 1
            continue
        if not after:
            before_only += 1
            continue
        spareable = False
        for y in after:
            busy = sum(1 for rep in replicas if rep != a["replica"] and any(
                z["replica"] == rep and z["completion_tokens"] <= short and z["sent"] <= y["sent"] < z["end"]
                for z in recs))
            if busy < len(replicas) - 1:
                spareable = True
        if spareable:
            after_spareable += 1
        else:
            after_unspareable += 1
    print(f"{path}: {len(late)} late by TPOT alone; stalled only by prefills sent before them {before_only}, "
          f"by one sent after while another replica had no short answer {after_spareable}, "
          f"by ones sent after while every other replica had one {after_unspareable}, "
          f"no long prefill overlapping {none}")
