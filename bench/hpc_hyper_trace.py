#!/usr/bin/env python3
"""Does HPC's chain settle? The affinity hyperparameters scan by scan on AppStream.

Uploads the issue-13 split of ../shared/data/appstream.jsonl (bench/hpc_labels.py's
`load_split`: shuffle 3, 80 % uploaded, the last 15 % of those tagged validation), fits
`hpc` with `--iterations` scans (burn-in half of them, no refit) for each `--seed`, polls
the job and records what each scan's progress reports: λ², the mean of η and the labels'
and words' log-likelihood. Prints them every `--every` scans, one column group per
seed; `--out` keeps every polled scan as JSON.

    python3 bench/hpc_hyper_trace.py --iterations 1000 --seeds 1,2
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import hpc_labels  # noqa: E402


def trace(binary, data, seed, iterations, threads):
    fit, val, _ = hpc_labels.load_split(data, 3)
    tmp = tempfile.mkdtemp(prefix="topicd_trace_")
    server, base = hpc_labels.start_service(binary, threads, tmp, port_offset=seed)
    try:
        corpus_id = hpc_labels.upload_split(base, fit, val)
        params = {"threads": threads, "iterations": iterations, "refit_with_validation": False}
        job = hpc_labels.request(base, "POST", "/v1/jobs", {"corpus_id": corpus_id, "model": "hpc", "params": params, "seed": seed})
        scans = {}
        while job["status"] not in ("succeeded", "failed", "cancelled"):
            time.sleep(0.2)
            job = hpc_labels.request(base, "GET", f"/v1/jobs/{job['id']}")
            p = job.get("progress") or {}
            if "lambda2" in p:
                scans[int(p["iteration"])] = {k: p[k] for k in ("lambda2", "eta_mean", "log_likelihood_labels", "log_likelihood_words")}
        if job["status"] != "succeeded":
            sys.exit(f"fit {job['status']}: {json.dumps(job)[:1000]}")
        return scans
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "appstream.jsonl"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "topicd"))
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--out")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    traces = {s: trace(args.bin, args.data, s, args.iterations, args.threads) for s in seeds}
    if args.out:
        json.dump(traces, open(args.out, "w"))
    print("| scan | " + " | ".join(f"seed {s}: λ² | η mean | label log-lik" for s in seeds) + " |")
    print("|---" * (1 + 3 * len(seeds)) + "|")
    for target in [1] + list(range(args.every, args.iterations + 1, args.every)):
        cells = []
        for s in seeds:
            # The polled scan nearest at or after the target (the poll samples scans).
            near = min((i for i in traces[s] if i >= target), default=None, key=lambda i: i - target)
            if near is None:
                cells += ["", "", ""]
                continue
            t = traces[s][near]
            cells += [f"{t['lambda2']:.2f}", f"{t['eta_mean']:.2f}", f"{t['log_likelihood_labels']:.0f}"]
        print(f"| {target} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
