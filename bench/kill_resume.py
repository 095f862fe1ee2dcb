#!/usr/bin/env python3
"""Kill the server at random moments of fits and check nothing is lost or changed.

What it does (bounded: 20 kills by default, a few minutes; not part of CI):
  1. starts `topicd serve` on a fresh SQLite file, uploads the AppStream test corpus
     (labels on a tree) and a synthetic bars corpus, and queues fits of several
     families (default LDA, HPC and DCNT) with a short checkpoint interval;
  2. kills the server with SIGKILL at `--kills` random moments (uniform gaps), starting
     it again each time on the same database;
  3. lets the jobs finish, then fits the same (corpus, model, params, seed) on a second,
     never-killed server and compares the stored model bytes job by job;
  4. runs `PRAGMA integrity_check` on the killed server's database.

It reports jobs succeeded, models identical, integrity, and how many kills landed while
a fit was running, and exits non-zero if any job failed or any model differs.

Usage: python3 bench/kill_resume.py [--kills 20] [--families lda,hpc,dcnt] [--seed 1]
       (BIN=path/to/topicd to use a given binary instead of building the release one)
"""

import argparse
import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from strict_docs import strict_ndjson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The fits each family gets: sized to take tens of seconds on one thread, so kills land
# in burn-in, in the kept part and around checkpoints.
FITS = {
    "lda": ("bars", {"topics": 10, "iterations": 4000, "burn_in": 1000, "thin": 10}),
    "hpc": ("appstream", {"iterations": 200, "burn_in": 60, "thin": 2}),
    "pcm": ("appstream", {"topics": 20, "iterations": 60, "burn_in": 20, "thin": 2}),
    "dcnt": ("bars", {"topics": 12, "iterations": 1500, "burn_in": 300, "thin": 5}),
    "scnt": ("bars", {"topics": 12, "iterations": 200, "burn_in": 50, "thin": 5}),
    "hdp": ("bars", {"topics": 20, "passes": 40}),
}


class Server:
    """A `topicd serve` child process on an ephemeral port."""

    def __init__(self, binary, db, threads):
        self.proc = subprocess.Popen(
            [binary, "serve", "--addr", "127.0.0.1:0", "--log-json", "--db", db, "--threads", str(threads)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TOPICD_LOG": "info"},
        )
        t0 = time.time()
        for line in self.proc.stderr:
            try:
                fields = json.loads(line).get("fields", {})
            except json.JSONDecodeError:
                continue
            if fields.get("message") == "topicd listening":
                self.base = "http://" + fields["addr"]
                break
            if time.time() - t0 > 60:
                raise RuntimeError("topicd did not start listening")
        else:
            raise RuntimeError("topicd exited before listening")
        # Drain stderr so the child never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def request(self, method, path, body=None, content_type="application/json"):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def upload_corpora(server):
    # Its lines carry `package` and `type`, which topicd keeps only under `meta`.
    body = strict_ndjson(os.path.join(ROOT, "tests", "data", "appstream.jsonl"))
    st, appstream = server.request("POST", "/v1/corpora?name=appstream&stem=true&top_fraction=0.2&duplicate_ids=keep_first", body, "application/x-ndjson")
    assert st == 201, appstream
    st, bars = server.request("POST", "/v1/corpora", {"name": "bars", "synthetic": {"kind": "bars", "documents": 3000, "tokens": 200, "seed": 3}})
    assert st == 201, bars
    return {"appstream": appstream["id"], "bars": bars["id"]}


def submit(server, corpora, families, checkpoint_every_s):
    jobs = []
    for i, family in enumerate(families):
        corpus, params = FITS[family]
        params = dict(params)
        if checkpoint_every_s is not None:
            params["checkpoint_every_s"] = checkpoint_every_s
        seed = 100 + i
        st, job = server.request("POST", "/v1/jobs", {"corpus_id": corpora[corpus], "model": family, "params": params, "seed": seed})
        assert st == 202, job
        jobs.append({"id": job["id"], "family": family, "seed": seed})
    return jobs


def job_states(server, jobs):
    return {j["id"]: server.request("GET", "/v1/jobs/" + j["id"])[1] for j in jobs}


def wait_all(server, jobs, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        states = job_states(server, jobs)
        if all(s["status"] not in ("queued", "running") for s in states.values()):
            return states
        time.sleep(0.5)
    raise RuntimeError("jobs did not finish in time")


def model_digest(db, model_id):
    with sqlite3.connect(db) as con:
        (data,) = con.execute("SELECT data FROM models WHERE id = ?", (model_id,)).fetchone()
    return hashlib.sha256(data).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--families", default="lda,hpc,dcnt")
    ap.add_argument("--seed", type=int, default=1, help="seed of the kill times")
    ap.add_argument("--mean-gap", type=float, default=3.0, help="mean seconds between kills")
    ap.add_argument("--checkpoint-every-s", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    families = args.families.split(",")
    unknown = [f for f in families if f not in FITS]
    if unknown:
        sys.exit(f"no fit configured for {unknown}; known: {', '.join(FITS)}")
    binary = os.environ.get("BIN")
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=ROOT, check=True)
        binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "topicd")
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="topicd-kill-")
    db = os.path.join(tmp, "killed.db")

    server = Server(binary, db, args.threads)
    corpora = upload_corpora(server)
    jobs = submit(server, corpora, families, args.checkpoint_every_s)
    kills_mid_fit = 0
    t_start = time.time()
    for k in range(args.kills):
        # Kill only while a fit runs: wait for one to be running (a restarted server
        # re-queues and resumes it), then a random gap, so every kill lands mid-fit
        # unless the fits end first.
        while True:
            states = job_states(server, jobs)
            if any(s["status"] == "running" for s in states.values()) or all(s["status"] in ("succeeded", "failed", "cancelled") for s in states.values()):
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0.2, 2 * args.mean_gap - 0.2))
        states = job_states(server, jobs)
        running = sum(s["status"] == "running" for s in states.values())
        if running == 0:
            print(f"the fits ended after {k} kills", flush=True)
            break
        kills_mid_fit += 1
        server.kill()
        print(f"kill {k + 1:2d} at {time.time() - t_start:6.1f} s: {running} fit(s) running", flush=True)
        server = Server(binary, db, args.threads)
    states = wait_all(server, jobs, timeout=3600)
    server.stop()
    killed_s = time.time() - t_start

    reference_db = os.path.join(tmp, "reference.db")
    reference = Server(binary, reference_db, args.threads)
    reference_corpora = upload_corpora(reference)
    reference_jobs = submit(reference, reference_corpora, families, None)
    reference_states = wait_all(reference, reference_jobs, timeout=3600)
    reference.stop()

    rows, ok = [], True
    for job, ref in zip(jobs, reference_jobs):
        s, r = states[job["id"]], reference_states[ref["id"]]
        succeeded = s["status"] == "succeeded"
        identical = succeeded and r["status"] == "succeeded" and model_digest(db, s["model_id"]) == model_digest(reference_db, r["model_id"])
        ok &= succeeded and identical
        progress = s.get("progress") or {}
        rows.append((job["family"], s["status"], s.get("attempts"), progress.get("resumed_from"), identical))
    with sqlite3.connect(db) as con:
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    ok &= integrity == "ok"

    print()
    print(f"{args.kills} SIGKILLs over {killed_s:.0f} s ({kills_mid_fit} while a fit ran), seed {args.seed}, {args.threads} threads")
    print("| family | status | attempts | last resumed from | model identical to the uninterrupted fit |")
    print("|---|---|---|---|---|")
    for family, status, attempts, resumed, identical in rows:
        print(f"| {family} | {status} | {attempts} | {resumed} | {'yes' if identical else 'NO'} |")
    print(f"\njobs succeeded: {sum(r[1] == 'succeeded' for r in rows)}/{len(rows)}; models identical: {sum(r[4] for r in rows)}/{len(rows)}; "
          f"PRAGMA integrity_check: {integrity}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
