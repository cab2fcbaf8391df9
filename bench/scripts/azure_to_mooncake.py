"""Convert Azure's public LLM inference trace (AzurePublicDataset,
data/AzureLLMInferenceTrace_{conv,code}.csv: TIMESTAMP,ContextTokens,
GeneratedTokens, one request a line) to the Mooncake JSONL format that
`inferrail bench --workload mooncake --trace` reads: timestamp in ms from the
first request, input_length, output_length, and no hash ids, so no two
prompts share a block (the Azure trace records lengths only).

Usage: python3 azure_to_mooncake.py IN.csv > OUT.jsonl
Lines that are not a whole record (a cut last line) stop the conversion with
an error naming the line."""
import csv
import datetime
import json
import sys


def parse_time(s):
    # "2023-11-16 18:15:46.6805900": seven fractional digits, one more than
    # datetime keeps; the fraction is cut to microseconds.
    day, _, frac = s.partition(".")
    t = datetime.datetime.strptime(day, "%Y-%m-%d %H:%M:%S")
    return t + datetime.timedelta(microseconds=int((frac + "000000")[:6]))


def main(path):
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        if header != ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]:
            sys.exit(f"{path}: header {header}, want TIMESTAMP,ContextTokens,GeneratedTokens")
        start = None
        for n, row in enumerate(rows, start=2):
            try:
                t, inp, out = parse_time(row[0]), int(row[1]), int(row[2])
            except (ValueError, IndexError) as e:
                sys.exit(f"{path}:{n}: {row}: {e}")
            if inp < 0 or out < 0:
                sys.exit(f"{path}:{n}: negative length {row}")
            start = start or t
            ms = round((t - start).total_seconds() * 1000)
            print(json.dumps({"timestamp": ms, "input_length": inp, "output_length": out, "hash_ids": []}))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
