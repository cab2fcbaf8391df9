"""Appends every engine's scheduler state to a JSON-lines file ten times a
second until an engine stops answering. Usage: poll_engines.py OUT PORT..."""
import json
import sys
import time
import urllib.request

out, ports = open(sys.argv[1], "w"), sys.argv[2:]
while True:
    t = time.time()
    row = {"t": t}
    try:
        for p in ports:
            body = json.load(urllib.request.urlopen(f"http://127.0.0.1:{p}/inferrail/debug/load", timeout=1))
            row[p] = body["ranks"][0]["engine"]
    except Exception:
        break
    out.write(json.dumps(row) + "\n")
    out.flush()
    time.sleep(max(0, 0.1 - (time.time() - t)))
