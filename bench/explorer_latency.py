#!/usr/bin/env python3
"""The console explorer's requests, timed on a cold server (issue 15: the explorer of the
133-label AppStream HPC model renders in under a second).

Uploads ../shared/data/appstream.jsonl (duplicate ids: keep the first), fits HPC (40 scans,
seed 1), restarts the server so no model is cached, then times the requests the
explorer makes when it opens the model, in its order, three times (cold, then warm):
the model, the topic table (FREX, 8 words), topic 0's 20 and all its words (the
scatter), the intertopic map, topic 0's representative documents and the evaluation.
Prints one JSON line per pass with each request's seconds and the total.

Usage: python3 bench/explorer_latency.py target/release/topicd
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "appstream.jsonl")
PORT = 23997
BASE = f"http://127.0.0.1:{PORT}"


def start(binary, db):
    proc = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{PORT}", "--db", db], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(BASE + "/healthz", timeout=1)
            return proc
        except Exception:
            time.sleep(0.05)
    raise SystemExit("the server did not start")


def req(method, path, body=None, ct="application/json"):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    r = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        r.add_header("content-type", ct)
    with urllib.request.urlopen(r, timeout=600) as f:
        return json.loads(f.read() or b"null")


def main():
    binary = sys.argv[1]
    db = os.path.join(tempfile.mkdtemp(), "db.sqlite")
    proc = start(binary, db)
    try:
        corpus = req("POST", "/v1/corpora?name=appstream&duplicate_ids=keep_first", open(DATA, "rb").read(), "application/x-ndjson")
        job = req("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": "hpc", "params": {"iterations": 40}, "seed": 1})
        while job["status"] not in ("succeeded", "failed"):
            time.sleep(0.5)
            job = req("GET", f"/v1/jobs/{job['id']}")
        model = job["model_id"]
    finally:
        proc.terminate()
        proc.wait()
    proc = start(binary, db)
    rank = "rank=frex&weight=0.5&comparison=siblings"
    paths = [
        f"/v1/models/{model}",
        f"/v1/models/{model}/topics?{rank}&n=8",
        f"/v1/models/{model}/topics/0/frex?{rank}&n=20",
        f"/v1/models/{model}/topics/0/frex?{rank}&n=10000",
        f"/v1/models/{model}/topic-map",
        f"/v1/models/{model}/topics/0/documents?n=5",
        f"/v1/models/{model}/evaluation",
    ]
    try:
        for run in ("cold", "warm", "warm"):
            seconds = {}
            for p in paths:
                t = time.perf_counter()
                try:
                    req("GET", p)
                except urllib.error.HTTPError as e:
                    # A model without a test split answers /evaluation with 404, as the
                    # console expects; anything else is a failure.
                    if not (e.code == 404 and p.endswith("/evaluation")):
                        raise
                seconds[p.split(model)[1] or "/"] = round(time.perf_counter() - t, 3)
            print(json.dumps({"run": run, "labels": corpus.get("num_labels"), "total_s": round(sum(seconds.values()), 3), "requests": seconds}), flush=True)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
