"""Reads a bench result file for the analysis scripts: gzip JSON (.json.gz,
as bench compare writes results since they are compressed) or plain JSON
(the parts not rerun since, and `bench run --out FILE.json`), told by the
file's first bytes as bench.ReadResult tells them.

Usage from a script in this directory: from benchresult import read_result"""

import gzip
import json


def read_result(path):
    """The decoded result in path (its "records", "summary", ...)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:2] == b"\x1f\x8b":
        try:
            b = gzip.decompress(b)
        except (OSError, EOFError) as e:
            raise SystemExit(f"decompress result {path}: {e}")
    try:
        return json.loads(b)
    except ValueError as e:
        raise SystemExit(f"decode result {path}: {e}")
