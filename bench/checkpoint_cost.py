#!/usr/bin/env python3
"""What checkpoints cost a fit, and how long a resume takes (issue 14), through the service.

For one corpus and one fit (model, params, seed):
  1. overhead: the fit with `checkpoint_every_s` 0 (off) and at the interval given
     (default 60, the server's default), alternating, `--reps` runs each; reports each
     fit's seconds (from the job's creation to its end, every attempt included) and, from the server's
     log, every checkpoint's size, the seconds the fit spent encoding it and the seconds
     the runner spent storing it (checksum and SQLite write, beside the running fit);
     It also reports the job's attempts and the server's lease warnings during the
     fit: a checkpoint whose store held the database's write lock longer than the lease
     (30 s) used to cost the job its lease, and a fresh attempt from the checkpoint;
  2. resume (unless --skip-resume): the same fit with checkpoints on, the server killed (SIGKILL) just after its
     first checkpoint is stored, then started again; reports the seconds from the new
     process' start to the job running again (ready, checkpoint read and checked,
     state decoded and restored), read from the log's timestamps, and that the job
     succeeded with the model of the uninterrupted runs.

Prints one JSON line per measurement and a summary line.

Usage: python3 bench/checkpoint_cost.py BIN CORPUS.jsonl UPLOAD_QUERY MODEL PARAMS_JSON
          [--every 60] [--reps 2] [--threads 2] [--seed 1]
e.g.   python3 bench/checkpoint_cost.py target/release/topicd bench/out/hpc_synth_30000.jsonl \
          'name=synth&stopwords=none' hpc '{"iterations": 120, "burn_in": 60}'
"""

import argparse
import datetime
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

from strict_docs import strict_ndjson


def parse_args():
    a = argparse.ArgumentParser()
    a.add_argument("bin")
    a.add_argument("corpus")
    a.add_argument("query")
    a.add_argument("model")
    a.add_argument("params")
    a.add_argument("--every", type=float, default=60)
    a.add_argument("--reps", type=int, default=2)
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--port", type=int, default=23998)
    a.add_argument("--skip-resume", action="store_true", help="leave out the kill-and-resume measurement")
    return a.parse_args()


class Server:
    """`topicd serve` on a database file, JSON logs to a file."""

    def __init__(self, args, db, log):
        self.args, self.db, self.log = args, db, log
        self.base = f"http://127.0.0.1:{args.port}"
        self.proc = None

    def start(self):
        self.started = time.time()
        env = dict(os.environ, TOPICD_LOG_JSON="true", TOPICD_LOG="info")
        self.proc = subprocess.Popen(
            [self.args.bin, "serve", "--addr", f"127.0.0.1:{self.args.port}", "--db", self.db, "--threads", str(self.args.threads)],
            stdout=open(self.log, "a"), stderr=subprocess.STDOUT, env=env)
        for _ in range(600):
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=1)
                return
            except Exception:
                time.sleep(0.05)
        raise SystemExit("the server did not start")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def req(self, method, path, body=None, ct="application/json"):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            r.add_header("content-type", ct)
        with urllib.request.urlopen(r, timeout=3600) as f:
            return json.loads(f.read() or b"null")


def log_lines(path):
    out = []
    for line in open(path):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def ts(entry):
    return datetime.datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()


def wait(server, job_id, until):
    while True:
        j = server.req("GET", f"/v1/jobs/{job_id}")
        if until(j):
            return j
        time.sleep(0.2)


def model_digest(db, job_id):
    con = sqlite3.connect(db)
    row = con.execute("SELECT data FROM models WHERE job_id = ?", (job_id,)).fetchone()
    con.close()
    return hashlib.sha256(row[0]).hexdigest() if row else None


def seconds(job):
    """From the job's creation to its end: every attempt of a job that lost its lease and
    was taken up again counts (the queue wait before the first is milliseconds here)."""
    parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    return parse(job["finished_at"]) - parse(job["created_at"])


def main():
    args = parse_args()
    params = json.loads(args.params)
    tmp = tempfile.mkdtemp()
    db, log = os.path.join(tmp, "db.sqlite"), os.path.join(tmp, "server.log")
    s = Server(args, db, log)
    s.start()
    corpus = s.req("POST", f"/v1/corpora?{args.query}", strict_ndjson(args.corpus), "application/x-ndjson")
    fit = lambda every: s.req("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": args.model, "seed": args.seed,
                                                    "params": dict(params, threads=args.threads, checkpoint_every_s=every)})
    done = lambda j: j["status"] in ("succeeded", "failed", "cancelled")
    runs, digests = [], set()
    try:
        for rep in range(args.reps):
            for every in (0, args.every):
                mark = len(log_lines(log))
                j = wait(s, fit(every)["id"], done)
                cps = [e["fields"] for e in log_lines(log)[mark:] if e.get("fields", {}).get("message") in ("checkpoint encoded", "checkpoint stored")]
                enc = [c for c in cps if c["message"] == "checkpoint encoded"]
                sto = [c for c in cps if c["message"] == "checkpoint stored"]
                leases = [e for e in log_lines(log)[mark:] if "lease" in e.get("fields", {}).get("message", "")]
                run = {"checkpoint_every_s": every, "status": j["status"], "fit_seconds": round(seconds(j), 2), "checkpoints": len(sto),
                       "attempts": j["attempts"], "lease_warnings": len(leases),
                       "bytes": max((c["bytes"] for c in sto), default=0),
                       "encode_s": [round(c["encode_s"], 3) for c in enc], "store_s": [round(c["store_s"], 3) for c in sto]}
                runs.append(run)
                digests.add(model_digest(db, j["id"]))
                print(json.dumps(run), flush=True)
        if args.skip_resume:
            return report(args, runs, digests, None)
        # Resume: kill just after the first stored checkpoint, start again.
        j = fit(args.every)
        wait(s, j["id"], lambda j: (j.get("progress") or {}).get("checkpoint") or done(j))
        s.kill()
        mark = len(log_lines(log))
        s.start()
        restarted = s.started
        final = wait(s, j["id"], done)
        entries = log_lines(log)[mark:]
        resumed = next((e for e in entries if e.get("fields", {}).get("message") == "resumed from the checkpoint"), None)
        read = next((e for e in entries if e.get("fields", {}).get("message") == "resuming from a checkpoint"), None)
        resume = {"resume": True, "status": final["status"], "resumed_from": (final.get("progress") or {}).get("resumed_from"),
                  "seconds_to_read_checkpoint": round(ts(read) - restarted, 2) if read else None,
                  "seconds_to_running_again": round(ts(resumed) - restarted, 2) if resumed else None,
                  "model_identical": model_digest(db, final["id"]) in digests and len(digests) == 1}
        print(json.dumps(resume), flush=True)
    finally:
        s.stop()
    report(args, runs, digests, resume)


def report(args, runs, digests, resume):
    """The summary line; exits non-zero unless every fit succeeded with the same model."""
    off = [r["fit_seconds"] for r in runs if r["checkpoint_every_s"] == 0]
    on = [r["fit_seconds"] for r in runs if r["checkpoint_every_s"] != 0]
    mean = lambda xs: sum(xs) / len(xs)
    cost = [e + st for r in runs for e, st in zip(r["encode_s"], r["store_s"])]
    print(json.dumps({"summary": True, "fit_seconds_off": off, "fit_seconds_on": on,
                      "overhead_on_means": round(mean(on) / mean(off) - 1, 4),
                      "seconds_per_checkpoint_encode_plus_store": round(mean(cost), 3) if cost else None,
                      "share_of_interval": round(mean(cost) / args.every, 4) if cost else None,
                      "models_identical_across_runs": len(digests) == 1}))
    sys.exit(0 if len(digests) == 1 and all(r["status"] == "succeeded" for r in runs) and (resume is None or resume["status"] == "succeeded") else 1)


if __name__ == "__main__":
    main()
