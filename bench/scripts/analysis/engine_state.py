"""Summarizes poll_engines.py's samples from 6 s to 36 s: requests before
their first token (all replicas, and fullest minus emptiest), running, and
how often a replica with a waiting request had under 100 free blocks.
Usage: engine_state.py LOAD.jsonl"""
import json
import statistics as st
import sys

rows = [json.loads(l) for l in open(sys.argv[1])]
t0 = rows[0]["t"]
rows = [r for r in rows if 6 < r["t"] - t0 < 36]
ks = [k for k in rows[0] if k != "t"]


def mean(f):
    return st.mean(f(r) for r in rows)


def bft(r, k):
    return r[k]["BeforeFirstToken"]


print("samples %d" % len(rows))
print("before first token: all %.1f, fullest minus emptiest %.1f" % (
    mean(lambda r: sum(bft(r, k) for k in ks)),
    mean(lambda r: max(bft(r, k) for k in ks) - min(bft(r, k) for k in ks))))
print("running: all %.1f" % mean(lambda r: sum(r[k]["Running"] for k in ks)))
waiting = [(r, k) for r in rows for k in ks if r[k]["Waiting"] > 0]
print("replica samples with a waiting request: %d, of them under 100 free blocks: %d" % (
    len(waiting), sum(1 for r, k in waiting if r[k]["FreeBlocks"] < 100)))
