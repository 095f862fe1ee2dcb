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
import sys
import tempfile
import time
import urllib.error

from topicd_service import APPSTREAM, Service

PORT = 23997


def main():
    binary = sys.argv[1]
    db = os.path.join(tempfile.mkdtemp(), "db.sqlite")
    service = Service(binary, db, PORT)
    try:
        corpus = service.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first")
        model = service.fit(corpus["id"], "hpc", {"iterations": 40})["model_id"]
    finally:
        service.stop()
    service = Service(binary, db, PORT)
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
                    service.req("GET", p)
                except urllib.error.HTTPError as e:
                    # A model without a test split answers /evaluation with 404, as the
                    # console expects; anything else is a failure.
                    if not (e.code == 404 and p.endswith("/evaluation")):
                        raise
                seconds[p.split(model)[1] or "/"] = round(time.perf_counter() - t, 3)
            print(json.dumps({"run": run, "labels": corpus.get("num_labels"), "total_s": round(sum(seconds.values()), 3), "requests": seconds}), flush=True)
    finally:
        service.stop()


if __name__ == "__main__":
    main()
