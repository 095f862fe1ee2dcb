#!/usr/bin/env python3
"""Each family's fit memory estimate against the peak resident memory a fit really adds
to the server (issue 40: within ±30 % for every family at two corpus sizes).

For each family and size: a fresh `topicd serve` on a new SQLite file; the corpus (the
first N AppStream documents with their label paths, ../shared/data/appstream.jsonl) or,
for HDP-aMMSB, a planted-partition graph of N nodes is uploaded; the server's VmRSS is
read just before the fit is submitted and every 10 ms until the job ends; the fit's
measured peak is the largest VmRSS less the one before. The job's own
`memory_estimate_bytes` is the estimate. Every fit checkpoints (checkpoint_every_s
0.2), since a checkpoint's bytes are part of a fit's peak; iterations are few, since
nothing a fit holds grows with them (kept samples are thinned into sums).

    python3 bench/fit_memory.py --bin target/release/topicd [--sizes 500,2017] [--graph-nodes 1000,4000] [--threads 2]

Prints a Markdown table. Standard library only.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cold_crowd import APPSTREAM, DOCUMENT_KEYS, Server, mb  # noqa: E402

# Parameters of each family's fit: few iterations (memory does not grow with them).
PARAMS = {
    "lda": {"topics": 100, "iterations": 20},
    "hpc": {"iterations": 12, "burn_in": 4},
    "pcm": {"topics": 50, "iterations": 12, "burn_in": 4},
    "dcnt": {"topics": 50, "iterations": 12, "burn_in": 4},
    "scnt": {"topics": 50, "iterations": 12, "burn_in": 4},
    "hdp": {"topics": 100, "passes": 4},
    "hdp_ammsb": {"communities": 50, "passes": 4},
}


def appstream(n):
    out = []
    for line in open(APPSTREAM, encoding="utf-8"):
        d = json.loads(line)
        out.append(json.dumps({k: v for k, v in d.items() if k in DOCUMENT_KEYS}))
        if len(out) == n:
            break
    return "\n".join(out).encode()


def planted_graph(nodes, blocks=8, p_in=0.2, p_out=0.01, seed=1):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(nodes)]
    edges = [[names[i], names[j]] for i in range(nodes) for j in range(i + 1, nodes) if rng.random() < (p_in if i % blocks == j % blocks else p_out)]
    return {"nodes": names, "edges": edges}


def measure(binary, family, size, threads, tmp):
    db = os.path.join(tmp, f"{family}-{size}.db")
    s = Server(binary, db, ["--threads", str(threads), "--checkpoint-every-s", "0.2"])
    params = dict(PARAMS[family], threads=threads, checkpoint_every_s=0.2)
    if family == "hdp_ammsb":
        graph = s.json("POST", "/v1/graphs", planted_graph(size))
        body = {"graph_id": graph["id"], "model": family, "params": params, "seed": 1}
        what = f"{size} nodes, {graph['num_edges']} edges"
    else:
        corpus = s.json("POST", "/v1/corpora?name=appstream&duplicate_ids=keep_first", appstream(size), "application/x-ndjson")
        body = {"corpus_id": corpus["id"], "model": family, "params": params, "seed": 1}
        what = f"{corpus['num_documents']} docs, {corpus['num_terms']} terms, {corpus['num_tokens']} tokens, {corpus['num_labels']} labels"
    time.sleep(0.5)
    before = s.status("VmRSS")
    job = s.json("POST", "/v1/jobs", body)
    peak = before
    t0 = time.time()
    while True:
        peak = max(peak, s.status("VmRSS"))
        if time.time() - t0 > 0.25:
            job = s.json("GET", f"/v1/jobs/{job['id']}")
            t0 = time.time()
            if job["status"] in ("succeeded", "failed", "cancelled"):
                break
        time.sleep(0.01)
    s.stop()
    if job["status"] != "succeeded":
        raise SystemExit(f"{family} at {size}: {job['status']}: {job.get('error')}")
    return what, peak - before, job.get("memory_estimate_bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/topicd")
    ap.add_argument("--sizes", default="500,2017", help="AppStream documents of the corpus families")
    ap.add_argument("--graph-nodes", default="1000,4000", help="nodes of HDP-aMMSB's planted-partition graphs")
    ap.add_argument("--families", default=",".join(PARAMS))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fit_memory")
    print("| family | input | params | estimate (MB) | measured peak (MB) | estimate / measured |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for family in args.families.split(","):
        sizes = args.graph_nodes if family == "hdp_ammsb" else args.sizes
        for n in (int(x) for x in sizes.split(",")):
            what, measured, estimate = measure(args.bin, family, n, args.threads, tmp)
            ratio = estimate / measured if estimate and measured > 0 else float("nan")
            ratios.append(ratio)
            est = f"{mb(estimate):.1f}" if estimate else "none"
            print(f"| {family} | {what} | {json.dumps(PARAMS[family])} | {est} | {mb(measured):.1f} | {ratio:.2f} |", flush=True)
    inside = sum(1 for r in ratios if 0.7 <= r <= 1.3)
    print(f"\n{inside} of {len(ratios)} estimates within ±30 % of the measured peak")


if __name__ == "__main__":
    sys.exit(main())
