#!/usr/bin/env python3
"""topicd's intertopic map against pyLDAvis' on the same model (issue 15: "a page against
LDAvis").

Fits LDA on ../shared/data/appstream.jsonl through the service (K = 20, 200 sweeps,
min_df = 2, seed 1), reads every topic's full word distribution (`GET /topics?rank=
frequency&n=V`: the posterior-mean φ, each row summing to 1) and topicd's map
(`GET /topic-map`), and computes pyLDAvis' map of the same distributions with its own
code (`pyLDAvis._prepare.js_PCoA`: Jensen–Shannon divergences and principal
coordinates, what `pyLDAvis.prepare` draws). Principal coordinates are defined up to
each axis' sign, so each pyLDAvis axis is flipped to agree with topicd's before
comparing. Prints the largest coordinate difference, the map's extent, and the
correlation of the two maps' inter-topic distances.

Usage: python3 bench/topic_map_vs_pyldavis.py target/release/topicd   (pip install pyLDAvis)
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
from pyLDAvis._prepare import js_PCoA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "appstream.jsonl")
PORT = 23996
BASE = f"http://127.0.0.1:{PORT}"


def req(method, path, body=None, ct="application/json"):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    r = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        r.add_header("content-type", ct)
    with urllib.request.urlopen(r, timeout=600) as f:
        return json.loads(f.read())


def main():
    binary = sys.argv[1]
    db = os.path.join(tempfile.mkdtemp(), "db.sqlite")
    proc = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{PORT}", "--db", db], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(BASE + "/healthz", timeout=1)
                break
            except Exception:
                time.sleep(0.05)
        corpus = req("POST", "/v1/corpora?name=appstream&duplicate_ids=keep_first&min_df=2", open(DATA, "rb").read(), "application/x-ndjson")
        job = req("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": "lda", "params": {"topics": 20, "iterations": 200}, "seed": 1})
        while job["status"] not in ("succeeded", "failed"):
            time.sleep(0.5)
            job = req("GET", f"/v1/jobs/{job['id']}")
        model = job["model_id"]
        v = corpus["num_terms"]
        topics = req("GET", f"/v1/models/{model}/topics?rank=frequency&n={v}")["topics"]
        ours = req("GET", f"/v1/models/{model}/topic-map")
    finally:
        proc.terminate()
        proc.wait()
    vocab = sorted({w["word"] for t in topics for w in t["words"]})
    index = {w: i for i, w in enumerate(vocab)}
    phi = np.zeros((len(topics), len(vocab)))
    for k, t in enumerate(topics):
        for w in t["words"]:
            phi[k, index[w["word"]]] = w["frequency"]
    phi /= phi.sum(axis=1, keepdims=True)
    theirs = np.real(js_PCoA(phi))
    mine = np.array([[t["x"], t["y"]] for t in ours["topics"]])
    for axis in range(2):
        if np.dot(theirs[:, axis], mine[:, axis]) < 0:
            theirs[:, axis] *= -1
    extent = float(np.abs(mine).max())
    diff = float(np.abs(theirs - mine).max())
    dist = lambda xy: np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))[np.triu_indices(len(xy), 1)]
    corr = float(np.corrcoef(dist(mine), dist(theirs))[0, 1])
    print(json.dumps({"topics": len(topics), "terms": len(vocab), "map_extent": round(extent, 6), "max_coordinate_difference": diff,
                      "distance_correlation": round(corr, 12), "explained": ours["explained"]}))


if __name__ == "__main__":
    main()
