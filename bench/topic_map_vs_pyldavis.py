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
import sys
import tempfile

import numpy as np
from pyLDAvis._prepare import js_PCoA
from topicd_service import APPSTREAM, Service

PORT = 23996


def main():
    service = Service(sys.argv[1], os.path.join(tempfile.mkdtemp(), "db.sqlite"), PORT)
    try:
        corpus = service.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first&min_df=2")
        model = service.fit(corpus["id"], "lda", {"topics": 20, "iterations": 200})["model_id"]
        topics = service.req("GET", f"/v1/models/{model}/topics?rank=frequency&n={corpus['num_terms']}")["topics"]
        ours = service.req("GET", f"/v1/models/{model}/topic-map")
    finally:
        service.stop()
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
