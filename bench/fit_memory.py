#!/usr/bin/env python3
"""Measure each family's fit memory through the service and compare it with the estimate.

For every family at two input sizes (AppStream subsets; a simulated HPC corpus; planted
partition graphs for HDP-aMMSB) this starts `topicd serve` on a fresh SQLite database,
uploads the input, reads the server's VmRSS just before submitting the fit, samples it
every 20 ms until the job ends (checkpoints every 0.5 s, so each fit writes some), and
prints the peak increment beside `topicd estimate-fit`'s figure for the same input
summary, parameters and threads. Iterations are few: memory does not grow with them
(kept samples are running sums, and thinned samples go to the database).

Usage (from the repository top, after `cargo build --release --locked`):
    python3 bench/fit_memory.py [--bin PATH] [--data appstream.jsonl] [--only lda,hpc]
        [--json results.json]
The binary defaults to `$CARGO_TARGET_DIR/release/topicd` (else `target/release/topicd`),
the data to `../shared/data/appstream.jsonl`.
"""

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

KEEP_KEYS = {"id", "text", "labels", "paths", "counts", "bow", "split", "features"}
THREADS = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(base, method, path, body=None, content_type="application/json"):
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={"content-type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}") from None


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def appstream_subset(path, n, out):
    """The first `n` lines' documents, their ids deduplicated (the first kept)."""
    seen = set()
    with open(path) as f, open(out, "w") as g:
        for i, line in enumerate(f):
            if i >= n:
                break
            doc = json.loads(line)
            if doc.get("id") in seen:
                continue
            seen.add(doc.get("id"))
            g.write(json.dumps({k: v for k, v in doc.items() if k in KEEP_KEYS}) + "\n")


def planted_graph(nodes, groups, p_in, p_out, seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(nodes)]
    group = [i % groups for i in range(nodes)]
    edges = []
    for i in range(nodes):
        for j in range(i + 1, nodes):
            if rng.random() < (p_in if group[i] == group[j] else p_out):
                edges.append([names[i], names[j]])
    return {"name": f"planted-{nodes}", "nodes": names, "edges": edges, "directed": False}


class Server:
    def __init__(self, binary, workdir):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        db = os.path.join(workdir, f"x{self.port}.db")
        self.log = open(os.path.join(workdir, f"server{self.port}.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--db", db, "--addr", f"127.0.0.1:{self.port}", "--rate-limit-per-s", "0", "--threads", str(THREADS)],
            stdout=self.log,
            stderr=self.log,
        )
        for _ in range(200):
            try:
                request(self.base, "GET", "/healthz")
                return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def measure(binary, workdir, run):
    """Upload the run's input, fit, and return the row of figures."""
    server = Server(binary, workdir)
    try:
        if run["input"] == "corpus":
            with open(run["file"], "rb") as f:
                up = request(server.base, "POST", "/v1/corpora?name=bench", f.read(), "application/x-ndjson")
            job = {"corpus_id": up["id"]}
            stats = ["--documents", up["num_documents"], "--terms", up["num_terms"], "--tokens", up["num_tokens"], "--labels", up["num_labels"], "--depth", up["tree_depth"]]
            size = f"{up['num_documents']} docs, {up['num_terms']} terms, {up['num_tokens']} tokens, {up['num_labels']} labels"
        else:
            up = request(server.base, "POST", "/v1/graphs", run["graph"])
            job = {"graph_id": up["id"]}
            stats = ["--nodes", up["num_nodes"], "--edges", up["num_edges"]]
            size = f"{up['num_nodes']} nodes, {up['num_edges']} edges"
        params = dict(run["params"], checkpoint_every_s=0.5)
        time.sleep(1.0)
        before = rss_bytes(server.proc.pid)
        peak = before
        t0 = time.time()
        created = request(server.base, "POST", "/v1/jobs", dict(job, model=run["model"], params=params, seed=1))
        job_id = created["id"]
        status, last_poll = created.get("status", "queued"), 0.0
        while True:
            peak = max(peak, rss_bytes(server.proc.pid))
            now = time.time()
            if now - last_poll > 0.25:
                last_poll = now
                j = request(server.base, "GET", f"/v1/jobs/{job_id}")
                status = j["status"]
                if status in ("succeeded", "failed", "cancelled"):
                    break
            time.sleep(0.02)
        seconds = time.time() - t0
        if status != "succeeded":
            raise RuntimeError(f"{run['name']}: job {status}: {j.get('error')}")
        checkpoints = j.get("progress", {}).get("checkpoint_iteration") if isinstance(j.get("progress"), dict) else None
        cmd = [binary, "estimate-fit", "--model", run["model"], "--threads", str(THREADS)] + [str(x) for x in stats]
        cmd += [f"--param={k}={json.dumps(v)}" for k, v in run["params"].items()]
        estimate = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["memory_estimate_bytes"]
        increment = peak - before
        return {
            "name": run["name"],
            "model": run["model"],
            "size": size,
            "params": run["params"],
            "seconds": round(seconds, 1),
            "before_mb": round(before / 2**20, 1),
            "estimate_mb": round(estimate / 2**20, 1),
            "measured_mb": round(increment / 2**20, 1),
            "ratio": round(estimate / increment, 2) if increment > 0 else None,
            "checkpoint_iteration": checkpoints,
            "stats": [str(x) for x in stats],
        }
    finally:
        server.stop()


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(repo, "target"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(target, "release", "topicd"))
    ap.add_argument("--data", default=os.path.join(repo, "..", "shared", "data", "appstream.jsonl"))
    ap.add_argument("--only", default="", help="comma-separated run names or models")
    ap.add_argument("--json", default="", help="also write the rows here")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="fit-memory-")
    small, large = os.path.join(work, "app500.jsonl"), os.path.join(work, "app2017.jsonl")
    appstream_subset(args.data, 500, small)
    appstream_subset(args.data, 2017, large)
    sim = os.path.join(work, "sim.jsonl")
    subprocess.run([args.bin, "simulate-hpc", "--documents", "6000", "--words", "6000", "--fanout", "5,8,8", "--out", sim], check=True, capture_output=True)

    mcmc = {"iterations": 100, "burn_in": 50, "thin": 5}
    runs = []
    for tag, path in (("500", small), ("2017", large)):
        corpus = {"input": "corpus", "file": path}
        runs += [
            dict(corpus, name=f"lda K=50 appstream {tag}", model="lda", params=dict(mcmc, topics=50)),
            dict(corpus, name=f"lda K=300 appstream {tag}", model="lda", params=dict(mcmc, topics=300)),
            dict(corpus, name=f"hpc appstream {tag}", model="hpc", params={"iterations": 10, "burn_in": 5, "thin": 1}),
            dict(corpus, name=f"pcm K=50 appstream {tag}", model="pcm", params={"topics": 50, "iterations": 10, "burn_in": 5, "thin": 1}),
            dict(corpus, name=f"dcnt K=50 appstream {tag}", model="dcnt", params=dict(mcmc, topics=50)),
            dict(corpus, name=f"scnt K=50 appstream {tag}", model="scnt", params=dict(mcmc, topics=50)),
            dict(corpus, name=f"hdp appstream {tag}", model="hdp", params={"passes": 5}),
        ]
    runs.append({"input": "corpus", "file": sim, "name": "hpc simulated 6000", "model": "hpc", "params": {"iterations": 6, "burn_in": 3, "thin": 1}})
    for nodes in (1000, 2500):
        graph = planted_graph(nodes, 10, 20 / nodes * 10, 2 / nodes, seed=nodes)
        runs.append({"input": "graph", "graph": graph, "name": f"hdp_ammsb {nodes} nodes", "model": "hdp_ammsb", "params": {"communities": 50, "passes": 3}})

    only = {x for x in args.only.split(",") if x}
    rows = []
    print(f"{'run':32} {'size':58} {'est MB':>8} {'meas MB':>8} {'ratio':>6} {'s':>6}", flush=True)
    for run in runs:
        if only and run["name"] not in only and run["model"] not in only:
            continue
        row = measure(args.bin, work, run)
        rows.append(row)
        print(f"{row['name']:32} {row['size']:58} {row['estimate_mb']:8.1f} {row['measured_mb']:8.1f} {row['ratio'] or 0:6.2f} {row['seconds']:6.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if r["ratio"] is None or not 0.7 <= r["ratio"] <= 1.3]
    if bad:
        print(f"{len(bad)} estimate(s) outside ±30 %: " + ", ".join(r["name"] for r in bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
