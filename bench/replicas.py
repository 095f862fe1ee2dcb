#!/usr/bin/env python3
"""topicd past one machine: PostgreSQL replicas against the single SQLite process (issue 17).

Usage: python3 bench/replicas.py BIN [--quick] [--parts 1,2,3,4] [--no-wait-idle]

BIN is a release `topicd` binary. PostgreSQL must answer on 127.0.0.1:5432 as user
`postgres` without a password (trust); every configuration gets a fresh database
`topicd_bench_<part>_<pid>` that is dropped afterwards (`DROP DATABASE ... WITH
(FORCE)`), and every server this script starts is stopped, also on an error or Ctrl-C.
Needs `psql` and `wrk` (`apt-get install -y wrk`) on PATH; Python standard library only.
Every server runs with `--rate-limit-per-s 0` (the load generator and this script are
all 127.0.0.1, one client to the per-address limit) and auth off (loopback).

Measures, in one run:

1. **Queue throughput.** A queue of 60 small LDA fits (the bars corpus, 200 documents of
   50 tokens; K = 5, 20 sweeps, 1 thread, no checkpoints, seeds 0..59) submitted at once
   to a `--role api` replica, drained by 1, 2 and 3 `--role worker --max-jobs 1
   --threads 1` replicas, each configuration on its own fresh PostgreSQL database; and
   the same queue on one SQLite `--role both --max-jobs 1 --threads 1` process (the
   anchor). From the jobs table: jobs per minute (first started_at to last
   finished_at), mean fit seconds (finished_at - started_at: claim, corpus decode, fit,
   model store), the mean idle gap between one worker's consecutive jobs, and the share
   of wall time that was fitting (sum of fit seconds / (workers x wall)).
2. **Lease takeover after SIGKILL.** Two `--role both` replicas (`--replica-id x`, `y`)
   with `--lease-s 5` (and 30 unless --quick) share a database; a long LDA fit (bars,
   2 000 documents of 200 tokens; K = 10, 100 000 sweeps, checkpoints every second,
   1 thread) runs on one of them. The holder (`jobs.lease_owner`) is killed with SIGKILL;
   the database is polled every 50 ms for the job `running` under the other replica with
   `attempts` incremented, for its first progress and for its first checkpoint of the
   new attempt (the kill comes 2-3 s, at random, after a checkpoint was seen). The
   killed replica is started again (new port, same id) and the next repetition kills
   the new holder; 3 repetitions per lease length (1 with --quick).
   The claim time is also read exactly from `job_leases.claimed_ms`. The job is
   cancelled at the end.
3. **GET /v1/models/{id}/topics?n=10 latency, PostgreSQL vs SQLite.** One `--role both`
   replica per store, AppStream uploaded as bench/load.py does, LDA K = 20, 50 sweeps,
   seed 1; then `wrk -t2 -c64 -d20s --latency` (3 s with --quick), twice per store in
   alternating order. On PostgreSQL the index scans of `models` during the run are read
   from `pg_stat_user_tables` (a cached read checks the model's names generation).
4. **Upload and model load of the HPC benchmark corpus** (`topicd simulate-hpc
   --documents 30000 --seed 1`, as bench/hpc_scans.sh makes it; 1 000 documents with
   --quick) on each store: the upload POST (`name=synth&stopwords=none`), an HPC fit with
   2 scans (burn-in 1, 2 threads, no validation or test split), the corpus and model blob
   sizes, then twice: restart the server and time the first GET topics (reads and
   decodes the model blob) and the next three (cached).

Results: one JSON line per measurement on stdout and in bench/out/replicas/results.jsonl,
Markdown tables at the end (also bench/out/replicas/replicas.md); server logs in
bench/out/replicas/*.log.

Before each part it waits (up to 40 min, polling every 20 s) until no `cargo` and no
`target/debug/deps` process runs, and records the load average (skipped by
--no-wait-idle and --quick).
"""

import argparse
import datetime
import json
import os
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from strict_docs import strict_ndjson  # noqa: E402
from topicd_service import APPSTREAM  # noqa: E402

OUT = os.path.join(HERE, "out", "replicas")
PG_HOST, PG_USER = "127.0.0.1", "postgres"
BIN = None
PROCS = []  # every server process started, to stop at the end
DBS = []  # every PostgreSQL database created, to drop at the end
ANOMALIES = []  # 5xx answers, failed jobs, replicas that did not take over
RESULTS = []
NEXT_PORT = [18400]
PHASE = random.Random(17)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def emit(rec):
    RESULTS.append(rec)
    line = json.dumps(rec)
    print(line, flush=True)
    with open(os.path.join(OUT, "results.jsonl"), "a") as f:
        f.write(line + "\n")


def anomaly(msg):
    log("ANOMALY: " + msg)
    ANOMALIES.append(msg)
    emit({"event": "anomaly", "message": msg})


def port():
    NEXT_PORT[0] += 1
    return NEXT_PORT[0]


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def busy():
    found = []
    for args in (["pgrep", "-x", "cargo"], ["pgrep", "-f", "target/debug/deps"]):
        r = subprocess.run(args, capture_output=True, text=True)
        found += r.stdout.split()
    return found


def wait_idle(part, enabled):
    """Wait until no cargo build or test binary runs; returns the machine note."""
    start = time.time()
    waited_out = False
    if enabled:
        while busy():
            if time.time() - start > 40 * 60:
                waited_out = True
                break
            time.sleep(20)
    note = {"part": part, "event": "idle_check", "waited_s": round(time.time() - start), "still_busy": waited_out or bool(busy()),
            "loadavg": loadavg(), "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")}
    emit(note)
    return note


def parse_ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


# ---------------------------------------------------------------- stores


class Psql:
    """One long-lived psql session: a query costs under a millisecond."""

    SEP = "\x1f"

    def __init__(self, db):
        self.p = subprocess.Popen(["psql", "-X", "-q", "-A", "-t", "-F", self.SEP, "-h", PG_HOST, "-U", PG_USER, "-d", db],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    def rows(self, sql):
        self.p.stdin.write(sql.strip().rstrip(";") + ";\n\\echo __END__\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if line == "":
                raise RuntimeError("psql ended")
            line = line.rstrip("\n")
            if line == "__END__":
                break
            out.append(line)
        if out and (out[0].startswith("ERROR:") or out[0].startswith("FATAL:")):
            raise RuntimeError(f"{sql}: {out}")
        return [tuple(None if v == "" else v for v in line.split(self.SEP)) for line in out if line != ""]

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=5)
        except Exception:
            self.p.kill()


def admin(sql):
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", PG_HOST, "-U", PG_USER, "-d", "postgres", "-c", sql], check=True,
                   stdout=subprocess.DEVNULL)


class Pg:
    kind = "postgres"

    def __init__(self, tag):
        self.name = f"topicd_bench_{tag}_{os.getpid()}"
        admin(f"CREATE DATABASE {self.name}")
        DBS.append(self.name)
        self.url = f"postgres://{PG_USER}@{PG_HOST}:5432/{self.name}"
        self.session = None

    def rows(self, sql):
        if self.session is None:
            self.session = Psql(self.name)
        return self.session.rows(sql)

    def blob_len(self, expr):
        return f"octet_length({expr})"

    def drop(self):
        if self.session:
            self.session.close()
        admin(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
        DBS.remove(self.name)


class Lite:
    kind = "sqlite"

    def __init__(self, tag):
        self.dir = tempfile.mkdtemp(prefix=f"topicd-bench-{tag}-")
        self.url = os.path.join(self.dir, "topicd.db")

    def rows(self, sql):
        con = sqlite3.connect(f"file:{self.url}?mode=ro", uri=True, timeout=30)
        try:
            return [tuple(None if v is None else str(v) for v in r) for r in con.execute(sql).fetchall()]
        finally:
            con.close()

    def blob_len(self, expr):
        return f"length({expr})"

    def drop(self):
        for f in os.listdir(self.dir):
            os.remove(os.path.join(self.dir, f))
        os.rmdir(self.dir)


# ---------------------------------------------------------------- servers


class Server:
    def __init__(self, name, db, args):
        self.name = name
        self.db = db
        self.args = args
        self.port = port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.logpath = os.path.join(OUT, f"{name}.log")
        logf = open(self.logpath, "a")
        logf.write(f"==== {time.strftime('%H:%M:%S')} start port {self.port} {' '.join(args)}\n")
        logf.flush()
        self.proc = subprocess.Popen([BIN, "serve", "--addr", f"127.0.0.1:{self.port}", "--db", db.url, "--rate-limit-per-s", "0", *args],
                                     stdout=subprocess.DEVNULL, stderr=logf)
        PROCS.append(self.proc)
        deadline = time.time() + 120
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"server {name} exited with {self.proc.returncode}; see {self.logpath}")
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=2)
                break
            except Exception:
                if time.time() > deadline:
                    raise SystemExit(f"server {name} did not answer /healthz; see {self.logpath}")
                time.sleep(0.05)

    def req(self, method, path, body=None, ct="application/json", timeout=900):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            r.add_header("content-type", ct)
        try:
            with urllib.request.urlopen(r, timeout=timeout) as f:
                return json.loads(f.read() or b"null")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")[:500]
            if e.code >= 500:
                anomaly(f"{self.name}: {method} {path} answered {e.code}: {text}")
            raise RuntimeError(f"{self.name}: {method} {path} answered {e.code}: {text}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                anomaly(f"{self.name} did not stop within 30 s of SIGTERM; killed")
                self.proc.kill()
                self.proc.wait()

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def bars(srv, documents, tokens, seed):
    return srv.req("POST", "/v1/corpora", {"name": "bars", "synthetic": {"kind": "bars", "documents": documents, "tokens": tokens, "seed": seed}})


def fit(srv, body, tries=3):
    """Submit a fit and wait for it; a failed fit is recorded as an anomaly and submitted
    again (at most `tries` times), so the measurement still gets its model."""
    for _ in range(tries):
        job = wait_job(srv, srv.req("POST", "/v1/jobs", body)["id"])
        if job["status"] == "succeeded":
            return job
    raise RuntimeError(f"{body['model']} fit failed {tries} times")


def wait_job(srv, job_id, timeout=3600):
    deadline = time.time() + timeout
    while True:
        job = srv.req("GET", f"/v1/jobs/{job_id}")
        if job["status"] in ("succeeded", "failed", "cancelled"):
            if job["status"] != "succeeded":
                anomaly(f"job {job_id} ({job['model']}) ended {job['status']}: {job.get('error')}")
            return job
        if time.time() > deadline:
            raise RuntimeError(f"job {job_id} did not end within {timeout} s")
        time.sleep(0.2)


# ---------------------------------------------------------------- part 1


QUEUE_PARAMS = {"topics": 5, "iterations": 20, "threads": 1, "checkpoint_every_s": 0}


def queue_run(kind, workers, njobs, rep):
    tag = f"queue_{kind}_{workers}"
    db = Pg(tag) if kind == "postgres" else Lite(tag)
    servers = []
    try:
        wargs = ["--max-jobs", "1", "--threads", "1"]
        if kind == "postgres":
            api = Server(f"{tag}-api", db, ["--role", "api", "--replica-id", "api"])
            servers.append(api)
            for i in range(workers):
                servers.append(Server(f"{tag}-w{i + 1}", db, ["--role", "worker", "--replica-id", f"w{i + 1}", *wargs]))
        else:
            api = Server(f"{tag}-both", db, ["--role", "both", "--replica-id", "solo", *wargs])
            servers.append(api)
        corpus = bars(api, 200, 50, 1)
        t0 = time.time()
        ids = [api.req("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": "lda", "params": QUEUE_PARAMS, "seed": i})["id"] for i in range(njobs)]
        submit_s = time.time() - t0
        deadline = time.time() + 1800
        while True:
            done = int(db.rows("SELECT COUNT(*) FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled')")[0][0])
            if done == njobs:
                break
            if time.time() > deadline:
                raise RuntimeError(f"{tag}: {done}/{njobs} jobs ended after 30 min")
            time.sleep(0.25)
        drain_s = time.time() - t0
        rows = db.rows("SELECT id, status, started_at, finished_at, attempts, error FROM jobs")
        holds = db.rows("SELECT job_id, attempt, owner FROM job_leases")
        statuses = {}
        for r in rows:
            statuses[r[1]] = statuses.get(r[1], 0) + 1
            if r[1] != "succeeded":
                anomaly(f"{tag}: job {r[0]} {r[1]} after {r[4]} attempts: {r[5]}")
            if int(r[4]) != 1:
                anomaly(f"{tag}: job {r[0]} took {r[4]} attempts")
        owner = {h[0]: h[2] for h in holds}
        jobs = [(owner.get(r[0]), parse_ts(r[2]), parse_ts(r[3])) for r in rows if r[2] and r[3]]
        first, last = min(j[1] for j in jobs), max(j[2] for j in jobs)
        wall = last - first
        fits = [e - s for _, s, e in jobs]
        per_owner = {}
        for o, s, e in sorted(jobs, key=lambda j: j[1]):
            per_owner.setdefault(o, []).append((s, e))
        gaps = [b[0] - a[1] for runs in per_owner.values() for a, b in zip(runs, runs[1:])]
        rec = {"part": 1, "store": kind, "workers": workers, "rep": rep, "jobs": njobs, "statuses": statuses,
               "jobs_per_owner": {o: len(v) for o, v in sorted(per_owner.items())},
               "submit_s": round(submit_s, 3), "first_start_after_submit_s": round(first - t0, 3), "wall_s": round(wall, 3),
               "jobs_per_min": round(60 * len(jobs) / wall, 1), "mean_fit_s": round(statistics.mean(fits), 4),
               "median_fit_s": round(statistics.median(fits), 4), "mean_gap_s": round(statistics.mean(gaps), 4) if gaps else None,
               "fitting_share": round(sum(fits) / (workers * wall), 3), "drain_s": round(drain_s, 2), "loadavg_after": loadavg()}
        emit(rec)
        return rec
    finally:
        for s in servers:
            s.stop()
        db.drop()


# ---------------------------------------------------------------- part 2


LONG_FIT = {"topics": 10, "iterations": 100000, "checkpoint_every_s": 1, "threads": 1}


def job_state(db, job_id):
    r = db.rows(f"""SELECT j.status, j.lease_owner, j.attempts, j.progress,
                       (SELECT attempt FROM checkpoints c WHERE c.job_id = j.id), (SELECT iteration FROM checkpoints c WHERE c.job_id = j.id)
                    FROM jobs j WHERE j.id = '{job_id}'""")[0]
    progress = json.loads(r[3]) if r[3] else None
    return {"status": r[0], "owner": r[1], "attempts": int(r[2]), "iteration": progress.get("iteration") if progress else None,
            "ckpt_attempt": int(r[4]) if r[4] else None, "ckpt_iteration": int(r[5]) if r[5] else None}


def takeover_run(lease_s, reps):
    tag = f"takeover_{int(lease_s)}"
    db = Pg(tag)
    args = ["--role", "both", "--lease-s", str(lease_s), "--max-jobs", "1", "--threads", "1"]
    servers = {}
    job_id = None
    recs = []
    try:
        for rid in ("x", "y"):
            servers[rid] = Server(f"{tag}-{rid}", db, [*args, "--replica-id", rid])
        corpus = bars(servers["x"], 2000, 200, 3)
        job_id = servers["x"].req("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": "lda", "params": LONG_FIT, "seed": 1})["id"]
        for rep in range(reps):
            # The holder has run for a while and stored a checkpoint of its own attempt.
            deadline = time.time() + 120
            while True:
                st = job_state(db, job_id)
                if st["status"] == "running" and st["ckpt_attempt"] == st["attempts"] and st["iteration"]:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"{tag}: no checkpoint of the running attempt within 120 s: {st}")
                time.sleep(0.2)
            # A random phase against the 1 s checkpoints, so the kill does not always
            # fall just after one (what the redone sweeps show).
            time.sleep(2.0 + PHASE.uniform(0.0, 1.0))
            st = job_state(db, job_id)
            victim = st["owner"]
            survivor = "y" if victim == "x" else "x"
            before = st
            kill_t = time.time()
            servers[victim].kill9()
            t_run = t_prog = t_ckpt = None
            seen = None
            deadline = kill_t + lease_s + 90
            while time.time() < deadline and (t_run is None or t_prog is None or t_ckpt is None):
                s = job_state(db, job_id)
                now = time.time()
                mine = s["status"] == "running" and s["owner"] == survivor and s["attempts"] > before["attempts"]
                if s["owner"] not in (None, victim, survivor) or (s["attempts"] > before["attempts"] and s["owner"] == victim):
                    anomaly(f"{tag}: unexpected holder after killing {victim}: {s}")
                if mine and t_run is None:
                    t_run, seen = now, s
                if mine and t_prog is None and s["iteration"] is not None:
                    t_prog = now
                if mine and t_ckpt is None and s["ckpt_attempt"] == s["attempts"]:
                    t_ckpt = now
                time.sleep(0.05)
            if t_run is None:
                anomaly(f"{tag}: rep {rep + 1}: {survivor} did not take the job over within {lease_s + 90} s of killing {victim}: {job_state(db, job_id)}")
            holds = db.rows(f"SELECT attempt, owner, claimed_ms, expires_ms, ended_ms, outcome FROM job_leases WHERE job_id = '{job_id}' ORDER BY attempt")
            hold = {int(h[0]): h for h in holds}
            old = hold.get(before["attempts"])
            new = hold.get(before["attempts"] + 1)
            kill_ms = kill_t * 1000
            rec = {"part": 2, "lease_s": lease_s, "rep": rep + 1, "killed": victim, "took_over": new[1] if new else None,
                   "attempt": before["attempts"] + 1, "iteration_at_kill": before["iteration"],
                   "sweeps_redone": before["iteration"] - seen["ckpt_iteration"] if seen and seen["ckpt_iteration"] is not None and before["iteration"] else None, "checkpoint_at_kill": before["ckpt_iteration"],
                   "resumed_from": seen["ckpt_iteration"] if seen else None,
                   "lease_left_at_kill_s": round((int(old[3]) - kill_ms) / 1000, 3) if old else None,
                   "claim_after_kill_s": round((int(new[2]) - kill_ms) / 1000, 3) if new else None,
                   "running_seen_after_kill_s": round(t_run - kill_t, 3) if t_run else None,
                   "progress_after_kill_s": round(t_prog - kill_t, 3) if t_prog else None,
                   "checkpoint_after_kill_s": round(t_ckpt - kill_t, 3) if t_ckpt else None,
                   "old_hold_outcome": old[5] if old else None}
            emit(rec)
            recs.append(rec)
            servers[victim] = Server(f"{tag}-{victim}", db, [*args, "--replica-id", victim])
        # Cancel the job on whichever replica; the holder learns of it by its heartbeat.
        servers["x"].req("POST", f"/v1/jobs/{job_id}/cancel")
        deadline = time.time() + 60
        while job_state(db, job_id)["status"] != "cancelled":
            if time.time() > deadline:
                anomaly(f"{tag}: job {job_id} not cancelled within 60 s: {job_state(db, job_id)}")
                break
            time.sleep(0.2)
        holds = db.rows(f"SELECT attempt, owner, claimed_ms, expires_ms, ended_ms, outcome FROM job_leases WHERE job_id = '{job_id}' ORDER BY attempt")
        spans = [(int(h[2]), int(h[4]) if h[4] else int(h[3])) for h in holds]
        overlaps = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])
        if overlaps:
            anomaly(f"{tag}: {overlaps} lease holds overlapped: {holds}")
        emit({"part": 2, "lease_s": lease_s, "event": "lease_history", "holds": [list(h) for h in holds], "overlaps": overlaps})
        return recs
    finally:
        for s in servers.values():
            s.stop()
        db.drop()


# ---------------------------------------------------------------- part 3


UNIT = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def ms_of(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if m.group(2) == "m":
        return float(m.group(1)) * 60000
    return float(m.group(1)) * UNIT[m.group(2)]


def wrk(url, seconds, clients=64, threads=2):
    r = subprocess.run(["wrk", f"-t{threads}", f"-c{clients}", f"-d{seconds}s", "--timeout", "30s", "--latency", url],
                       capture_output=True, text=True, check=True)
    out = r.stdout
    lat = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)$", out, re.M))
    mx = re.search(r"^\s+Latency\s+\S+\s+\S+\s+(\S+)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {"requests": int(re.search(r"(\d+) requests in", out).group(1)), "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": ms_of(lat["50"]), "p90_ms": ms_of(lat["90"]), "p99_ms": ms_of(lat["99"]), "max_ms": ms_of(mx.group(1)),
            "non2xx": int(non2xx.group(1)) if non2xx else 0, "socket_errors": sum(map(int, sock.groups())) if sock else 0, "raw": out}


def models_scans(db):
    r = db.rows("SELECT COALESCE(idx_scan, 0), COALESCE(seq_scan, 0) FROM pg_stat_user_tables WHERE relname = 'models'")[0]
    return int(r[0]), int(r[1])


def latency_setup(kind):
    db = Pg("latency") if kind == "postgres" else Lite("latency")
    srv = Server(f"latency_{kind}", db, ["--role", "both", "--replica-id", f"lat-{kind}"])
    corpus = srv.req("POST", "/v1/corpora?name=appstream&duplicate_ids=keep_first&stopwords=english&min_df=2",
                                  strict_ndjson(APPSTREAM), "application/x-ndjson")
    job = fit(srv, {"corpus_id": corpus["id"], "model": "lda", "params": {"topics": 20, "iterations": 50}, "seed": 1})
    return db, srv, job["model_id"]


def latency_round(kind, db, srv, model_id, seconds, rnd):
    url = f"{srv.base}/v1/models/{model_id}/topics?n=10"
    srv.req("GET", f"/v1/models/{model_id}/topics?n=10")  # load and rank once
    before = None
    if kind == "postgres":
        time.sleep(11)  # an idle backend flushes its statistics within 10 s (PostgreSQL 15)
        before = models_scans(db)
    la = loadavg()
    w = wrk(url, seconds)
    raw = w.pop("raw")
    with open(os.path.join(OUT, f"wrk_{kind}_{rnd}.txt"), "w") as f:
        f.write(raw)
    rec = {"part": 3, "store": kind, "round": rnd, "seconds": seconds, "clients": 64, **w, "loadavg_before": la}
    if kind == "postgres":
        time.sleep(11)
        after = models_scans(db)
        rec["models_index_scans_per_request"] = round((after[0] - before[0]) / max(w["requests"], 1), 3)
        rec["models_seq_scans"] = after[1] - before[1]
    if w["non2xx"] or w["socket_errors"]:
        anomaly(f"latency {kind} round {rnd}: {w['non2xx']} non-2xx, {w['socket_errors']} socket errors")
    emit(rec)
    return rec


def latency_part(seconds, rounds):
    setups = {}
    recs = []
    try:
        for kind in ("sqlite", "postgres"):
            setups[kind] = latency_setup(kind)
            # One server at a time under load: the other is stopped and started again.
            setups[kind][1].stop()
        order = ["sqlite", "postgres"]
        for rnd in range(rounds):
            for kind in (order if rnd % 2 == 0 else order[::-1]):
                db, old, model_id = setups[kind]
                srv = Server(f"latency_{kind}", db, ["--role", "both", "--replica-id", f"lat-{kind}"])
                setups[kind] = (db, srv, model_id)
                try:
                    recs.append(latency_round(kind, db, srv, model_id, seconds, rnd + 1))
                finally:
                    srv.stop()
        return recs
    finally:
        for db, srv, _ in setups.values():
            srv.stop()
            db.drop()


# ---------------------------------------------------------------- part 4


HPC_PARAMS = {"iterations": 2, "burn_in": 1, "threads": 2, "validation_fraction": 0, "test_fraction": 0, "checkpoint_every_s": 0}


def hpc_corpus(docs):
    path = os.path.join(HERE, "out", f"hpc_synth_{docs}.jsonl")
    if not (os.path.exists(path) and os.path.getsize(path) > 0):
        log(f"generating {path}")
        subprocess.run([BIN, "simulate-hpc", "--documents", str(docs), "--out", path, "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    return path


def timed_get(srv, path):
    t = time.time()
    body = srv.req("GET", path)
    return time.time() - t, body


def hpc_run(kind, path, docs, reps):
    db = Pg("hpc") if kind == "postgres" else Lite("hpc")
    args = ["--role", "both", "--replica-id", f"hpc-{kind}", "--threads", "2"]
    srv = Server(f"hpc_{kind}", db, args)
    try:
        body = open(path, "rb").read()
        la = loadavg()
        t = time.time()
        corpus = srv.req("POST", "/v1/corpora?name=synth&stopwords=none", body, "application/x-ndjson")
        upload_s = time.time() - t
        job = fit(srv, {"corpus_id": corpus["id"], "model": "hpc", "params": HPC_PARAMS, "seed": 1})
        fit_s = parse_ts(job["finished_at"]) - parse_ts(job["started_at"])
        model_id = job["model_id"]
        corpus_bytes = int(db.rows(f"SELECT {db.blob_len('data')} FROM corpora WHERE id = '{corpus['id']}'")[0][0])
        mrow = db.rows(f"SELECT {db.blob_len('data')}, {db.blob_len('lexicon')} FROM models WHERE id = '{model_id}'")[0]
        first, cached = [], []
        topics = f"/v1/models/{model_id}/topics?n=10"
        for _ in range(reps):
            srv.stop()
            srv = Server(f"hpc_{kind}", db, args)
            s, answer = timed_get(srv, topics)
            first.append(s)
            cached += [timed_get(srv, topics)[0] for _ in range(3)]
        rec = {"part": 4, "store": kind, "documents": docs, "upload_bytes": len(body), "corpus_documents": corpus.get("num_documents"),
               "upload_s": round(upload_s, 3), "fit_s": round(fit_s, 2), "corpus_blob_bytes": corpus_bytes,
               "model_blob_bytes": int(mrow[0]), "model_lexicon_bytes": int(mrow[1]) if mrow[1] else None,
               "topics": len(answer.get("topics", [])) if isinstance(answer, dict) else None,
               "first_read_s": [round(x, 3) for x in first], "cached_read_s": [round(x, 4) for x in cached], "loadavg_before": la}
        emit(rec)
        return rec
    finally:
        srv.stop()
        db.drop()


# ---------------------------------------------------------------- tables


def f(x, d=2):
    return "–" if x is None else f"{x:.{d}f}"


def tables(notes):
    out = []
    q = [r for r in RESULTS if r.get("part") == 1 and "workers" in r]
    if q:
        out += [f"Part 1, queue throughput (load average before: {notes.get(1, {}).get('loadavg', '?')}); "
                "median of the repetitions, range in brackets", "",
                "| store | workers | reps × jobs | failed | jobs/min | wall s | mean fit s | mean gap between a worker's jobs s | fitting share | first claim after submit s | jobs per worker (last rep) |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        configs = []
        for r in q:
            if (r["store"], r["workers"]) not in configs:
                configs.append((r["store"], r["workers"]))
        configs.sort(key=lambda c: (c[0] != "sqlite", c[1]))
        for store, workers in configs:
            rs = [r for r in q if (r["store"], r["workers"]) == (store, workers)]
            med = lambda k: statistics.median(r[k] for r in rs if r[k] is not None) if any(r[k] is not None for r in rs) else None  # noqa: E731
            rng = lambda k, d: f" ({min(r[k] for r in rs):.{d}f}–{max(r[k] for r in rs):.{d}f})" if len(rs) > 1 else ""  # noqa: E731
            name = "SQLite, one `both` process" if store == "sqlite" else "PostgreSQL, `api` + workers"
            failed = sum(n for r in rs for st, n in r["statuses"].items() if st != "succeeded")
            out.append(f"| {name} | {workers} | {len(rs)} × {rs[0]['jobs']} | {failed} | {med('jobs_per_min'):.0f}{rng('jobs_per_min', 0)} | {med('wall_s'):.2f} | "
                       f"{med('mean_fit_s'):.3f}{rng('mean_fit_s', 3)} | {f(med('mean_gap_s'), 3)} | {med('fitting_share'):.2f}{rng('fitting_share', 2)} | "
                       f"{med('first_start_after_submit_s'):.2f} | {', '.join(f'{k} {v}' for k, v in rs[-1]['jobs_per_owner'].items())} |")
        out.append("")
    t = [r for r in RESULTS if r.get("part") == 2 and "rep" in r]
    if t:
        out += [f"Part 2, takeover after SIGKILL (load average before: {notes.get(2, {}).get('loadavg', '?')})", "",
                "| lease s | rep | killed → new holder | lease left at kill s | claimed after kill s | running seen s | first progress s | first checkpoint s | resumed from checkpoint (sweeps redone) |",
                "|---:|---:|---|---:|---:|---:|---:|---:|---|"]
        for r in t:
            out.append(f"| {r['lease_s']:g} | {r['rep']} | {r['killed']} → {r['took_over']} | {f(r['lease_left_at_kill_s'])} | {f(r['claim_after_kill_s'])} | "
                       f"{f(r['running_seen_after_kill_s'])} | {f(r['progress_after_kill_s'])} | {f(r['checkpoint_after_kill_s'])} | "
                       f"{r['resumed_from']} ({r.get('sweeps_redone', '–')}) |")
        for lease in sorted({r["lease_s"] for r in t}):
            rs = [r for r in t if r["lease_s"] == lease]
            mean = lambda k: statistics.mean(r[k] for r in rs) if all(r[k] is not None for r in rs) else None  # noqa: E731
            out.append(f"| **{lease:g}** | **mean** | | {f(mean('lease_left_at_kill_s'))} | **{f(mean('claim_after_kill_s'))}** | "
                       f"{f(mean('running_seen_after_kill_s'))} | {f(mean('progress_after_kill_s'))} | {f(mean('checkpoint_after_kill_s'))} | |")
        out.append("")
    lat = [r for r in RESULTS if r.get("part") == 3 and "rps" in r]
    if lat:
        out += [f"Part 3, GET /v1/models/{{id}}/topics?n=10, 64 clients (load average before: {notes.get(3, {}).get('loadavg', '?')})", "",
                "| store | round | s | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | `models` index scans / request |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in lat:
            out.append(f"| {r['store']} | {r['round']} | {r['seconds']} | {r['requests']} | {r['rps']:.0f} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} | "
                       f"{r['p99_ms']:.2f} | {r['max_ms']:.1f} | {r['non2xx']} | {f(r.get('models_index_scans_per_request'))} |")
        out.append("")
    h = [r for r in RESULTS if r.get("part") == 4 and "upload_s" in r]
    if h:
        out += [f"Part 4, HPC corpus upload and model load (load average before: {notes.get(4, {}).get('loadavg', '?')})", "",
                "| store | documents | upload MB | upload s | corpus blob MB | fit s | model blob MB | first read s (after restart) | cached read s |",
                "|---|---:|---:|---:|---:|---:|---:|---|---|"]
        for r in h:
            mb = lambda b: f"{b / 1e6:.1f}"  # noqa: E731
            out.append(f"| {r['store']} | {r['documents']} | {mb(r['upload_bytes'])} | {r['upload_s']:.2f} | {mb(r['corpus_blob_bytes'])} | {r['fit_s']:.1f} | "
                       f"{mb(r['model_blob_bytes'] + (r['model_lexicon_bytes'] or 0))} | {', '.join(f'{x:.2f}' for x in r['first_read_s'])} | "
                       f"{min(r['cached_read_s']):.4f}–{max(r['cached_read_s']):.4f} |")
        out.append("")
    if ANOMALIES:
        out += ["Anomalies:", ""] + [f"- {a}" for a in ANOMALIES] + [""]
    return "\n".join(out)


# ---------------------------------------------------------------- main


def scan_logs():
    """Warnings and errors in the servers' logs, counted by message (ids and codes kept)."""
    counts = {}
    for name in sorted(os.listdir(OUT)):
        if not name.endswith(".log"):
            continue
        for line in open(os.path.join(OUT, name), errors="replace"):
            line = re.sub(r"\x1b\[[0-9;]*m", "", line)
            m = re.search(r"\s(WARN|ERROR)\s+(.*)", line)
            if m:
                msg = re.sub(r"job\{[^}]*\}: ", "", m.group(2))
                msg = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", msg)
                key = (name, m.group(1), msg[:300])
                counts[key] = counts.get(key, 0) + 1
    for (name, level, msg), n in sorted(counts.items()):
        emit({"event": "log", "server": name, "level": level, "count": n, "message": msg})
    return counts


def cleanup():
    for p in PROCS:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for name in list(DBS):
        try:
            admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            DBS.remove(name)
        except Exception as e:  # noqa: BLE001
            log(f"could not drop {name}: {e}")


def main():
    global BIN
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition, no idle wait (to debug)")
    ap.add_argument("--parts", default="1,2,3,4")
    ap.add_argument("--no-wait-idle", action="store_true")
    ap.add_argument("--tables-from", metavar="RESULTS_JSONL", help="only print the tables of a results.jsonl written before")
    ap.add_argument("--hpc-documents", type=int, default=None, help="default 30000 (1000 with --quick)")
    args = ap.parse_args()
    BIN = os.path.abspath(args.binary)
    if args.tables_from:
        notes = {}
        for line in open(args.tables_from):
            rec = json.loads(line)
            if rec.get("event") == "idle_check":
                notes[rec["part"]] = rec
            elif rec.get("event") == "anomaly":
                ANOMALIES.append(rec["message"])
            elif rec.get("event") is None:
                RESULTS.append(rec)
        print(tables(notes))
        return
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.endswith((".log", ".txt", ".jsonl", ".md")):
            os.remove(os.path.join(OUT, name))
    parts = {int(p) for p in args.parts.split(",")}
    wait = not (args.quick or args.no_wait_idle)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    njobs = 12 if args.quick else 60
    notes = {}
    machine = {"event": "machine", "nproc": os.cpu_count(), "avx512f": "avx512f" in open("/proc/cpuinfo").read(),
               "binary": BIN, "quick": args.quick, "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")}
    emit(machine)
    try:
        if 1 in parts:
            notes[1] = wait_idle(1, wait)
            for rep in range(1 if args.quick else 3):
                queue_run("sqlite", 1, njobs, rep + 1)
                for w in ((1, 2) if args.quick else (1, 2, 3)):
                    queue_run("postgres", w, njobs, rep + 1)
        if 2 in parts:
            notes[2] = wait_idle(2, wait)
            for lease in ((5.0,) if args.quick else (5.0, 30.0)):
                takeover_run(lease, 1 if args.quick else 3)
        if 3 in parts:
            notes[3] = wait_idle(3, wait)
            latency_part(3 if args.quick else 20, 1 if args.quick else 2)
        if 4 in parts:
            docs = args.hpc_documents or (1000 if args.quick else 30000)
            path = hpc_corpus(docs)
            notes[4] = wait_idle(4, wait)
            for kind in ("sqlite", "postgres"):
                hpc_run(kind, path, docs, 1 if args.quick else 2)
    finally:
        cleanup()
        logs = scan_logs()
        md = tables(notes)
        if logs:
            md += "\nServer log warnings and errors (count, server log, message):\n\n" + "\n".join(
                f"- {n} × `{name}` {level}: {msg}" for (name, level, msg), n in sorted(logs.items())) + "\n"
        with open(os.path.join(OUT, "replicas.md"), "w") as fh:
            fh.write(md + "\n")
        print(md)


if __name__ == "__main__":
    main()
