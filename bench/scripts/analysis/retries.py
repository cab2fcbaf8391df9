"""Per bench result file run with `--retries`: the measured requests refused
at least once, how many of those were answered and how many failed after
their retries, the answered retried requests' median TTFT, and the run's
share within the SLO and TTFT p50 / p99 (of the answered) from its summary.
Usage: python3 retries.py F...
e.g. F = the runs of `bench compare --workload W2 ... --routing shed.yaml --retries 2`"""
import statistics
import sys

from benchresult import read_result

for path in sys.argv[1:]:
    r = read_result(path)
    s = r["summary"]
    measured = [x for x in r["records"] if not x.get("warmup")]
    retried = [x for x in measured if x.get("retries", 0) > 0]
    answered = [x for x in retried if x["status"] == 200 and not x.get("err")]
    med = statistics.median(x["ttft_ns"] / 1e6 for x in answered) if answered else float("nan")
    print(f"{path}: {len(measured)} measured, {len(retried)} refused at least once "
          f"({len(answered)} answered, {len(retried) - len(answered)} failed; answered TTFT median {med:.0f} ms), "
          f"within the SLO {100 * s['good_fraction']:.1f}%, TTFT p50 {s['ttft']['p50_ms']:.0f} p99 {s['ttft']['p99_ms']:.0f} ms")
