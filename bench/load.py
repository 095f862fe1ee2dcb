#!/usr/bin/env python3
"""Mixed load on topicd while a fit runs (issue 16, item 6).

Usage: python3 bench/load.py BINARY [--duration 60] [--port 18231] [--fit-threads N]

1. Starts `BINARY serve --rate-limit-per-s 0` (the per-client rate limit, 100 requests
   per second per address by default, would otherwise answer the load generator 429s:
   every client here is 127.0.0.1) on a fresh database in a temporary directory, auth
   off (loopback).
2. Uploads ../shared/data/appstream.jsonl as NDJSON (english stop words, min_df 2),
   fits LDA (K = 20, 200 sweeps) and HPC (40 scans), then submits one long LDA fit
   (K = 100, 100 000 sweeps, the server's default thread count unless --fit-threads)
   that is still running when the load ends (it is cancelled afterwards).
3. Runs `oha` processes at once for --duration seconds, 64 clients in all:
     20  GET  /v1/models/{lda}/topics?n=10
     20  GET  /v1/models/{hpc}/topics?n=10
      6  POST /v1/models/{lda}/predict   (5 AppStream summaries per request)
      6  POST /v1/models/{hpc}/predict   (the same 5 summaries)
      8  GET  /v1/jobs/{running fit}
      4  POST /v1/corpora                (a 20-document JSON corpus, stored each time)
   and checks that the fit was running from start to end of the load.
4. Then `--topics-only` run: 64 clients on GET /v1/models/{lda}/topics?n=10 alone for
   the same duration, with the long fit cancelled (the p99 < 10 ms target), and once
   more with it running.

Each oha run's JSON goes to bench/out/load/; a Markdown table (per kind: requests,
req/s, p50, p99, max, non-2xx, 5xx, over 10 s) is printed and written to
bench/out/load/load.md. oha is `cargo install oha --locked` (crates.io); its
`--wait-ongoing-requests-after-deadline` keeps requests in flight at the deadline in
the figures rather than counting them as aborted.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from topicd_service import APPSTREAM, Service, appstream_summaries, wait_up  # noqa: E402

OUT = os.path.join(HERE, "out", "load")


class LoadService(Service):
    """`topicd serve` with extra flags (Service passes none)."""

    def __init__(self, binary, db, port, extra):
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", db, *extra],
                                     stdout=subprocess.DEVNULL, stderr=open(db + ".log", "w"))
        wait_up(self.base + "/healthz")


def summaries(n, skip=0):
    return appstream_summaries()[skip:skip + n]


def oha_bin():
    for p in (shutil.which("oha"), os.path.expanduser("~/.cargo/bin/oha")):
        if p and os.path.exists(p):
            return p
    raise SystemExit("oha not found: cargo install oha --locked")


def start_oha(name, url, clients, duration, method="GET", body=None):
    cmd = [oha_bin(), "-z", f"{duration}s", "-c", str(clients), "--no-tui", "--output-format", "json",
           "--wait-ongoing-requests-after-deadline", "-t", "60s", "-m", method, url]
    if body is not None:
        path = os.path.join(OUT, f"{name}.body.json")
        with open(path, "w") as f:
            json.dump(body, f)
        cmd[1:1] = ["-D", path, "-T", "application/json"]
    out = open(os.path.join(OUT, f"{name}.json"), "w")
    return name, clients, subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE), cmd


def row(name, clients, r):
    s = r["summary"]
    lat = r.get("latencyPercentiles") or {}
    codes = {int(k): v for k, v in (r.get("statusCodeDistribution") or {}).items()}
    errors = sum((r.get("errorDistribution") or {}).values())
    total = sum(codes.values()) + errors
    non2xx = sum(v for k, v in codes.items() if not 200 <= k < 300)
    fivexx = sum(v for k, v in codes.items() if k >= 500)
    slowest = s.get("slowest") or 0.0
    over10 = "0" if slowest <= 10 else "≥1"
    ms = lambda x: f"{1000 * x:.1f}" if x is not None else "–"
    return {"kind": name, "clients": clients, "requests": total, "rps": s.get("requestsPerSec"),
            "p50_ms": ms(lat.get("p50")), "p99_ms": ms(lat.get("p99")), "max_ms": ms(slowest),
            "non2xx": non2xx, "5xx": fivexx, "errors": errors, "over_10s": over10, "codes": codes}


def run(procs):
    rows = []
    for name, clients, p, cmd in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
        with open(os.path.join(OUT, f"{name}.json")) as f:
            rows.append(row(name, clients, json.load(f)))
    return rows


def table(title, rows):
    lines = [f"**{title}**", "",
             "| kind | clients | requests | req/s | p50 ms | p99 ms | max ms | non-2xx | 5xx | conn. errors | over 10 s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['clients']} | {r['requests']} | {r['rps']:.0f} | {r['p50_ms']} | {r['p99_ms']} | "
                     f"{r['max_ms']} | {r['non2xx']} | {r['5xx']} | {r['errors']} | {r['over_10s']} |")
    if len(rows) > 1:
        lines.append(f"| **all** | {sum(r['clients'] for r in rows)} | {sum(r['requests'] for r in rows)} | "
                     f"{sum(r['rps'] for r in rows):.0f} | | | {max(float(r['max_ms']) for r in rows):.1f} | "
                     f"{sum(r['non2xx'] for r in rows)} | {sum(r['5xx'] for r in rows)} | {sum(r['errors'] for r in rows)} | "
                     f"{'0' if all(r['over_10s'] == '0' for r in rows) else '≥1'} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--port", type=int, default=18231)
    ap.add_argument("--fit-threads", type=int, default=None)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="topicd-load-")
    svc = LoadService(args.binary, os.path.join(tmp, "t.db"), args.port, ["--rate-limit-per-s", "0"])
    report = []
    try:
        t = time.time()
        corpus = svc.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first&stopwords=english&min_df=2")
        lda = svc.fit(corpus["id"], "lda", {"topics": 20, "iterations": 200})
        hpc = svc.fit(corpus["id"], "hpc", {"iterations": 40})
        assert lda["status"] == hpc["status"] == "succeeded", (lda, hpc)
        lda, hpc = lda["model_id"], hpc["model_id"]
        print(f"setup: corpus {corpus['num_documents']} docs, LDA {lda}, HPC {hpc} in {time.time() - t:.1f} s", file=sys.stderr)
        params = {"topics": 100, "iterations": 100000, "checkpoint_every_s": 0}
        if args.fit_threads:
            params["threads"] = args.fit_threads
        job = svc.req("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": "lda", "params": params, "seed": 2})
        for _ in range(600):
            job = svc.req("GET", f"/v1/jobs/{job['id']}")
            if job["status"] == "running" and (job.get("progress") or {}).get("iteration", 0) >= 1:
                break
            time.sleep(0.1)
        assert job["status"] == "running", job
        short = summaries(5)
        upload = {"name": "load", "documents": [{"id": d["id"], "text": d["text"]} for d in summaries(20, skip=100)],
                  "preprocess": {"stopwords": "english", "min_df": 1}}
        b, d = svc.base, args.duration
        procs = [
            start_oha("topics_lda", f"{b}/v1/models/{lda}/topics?n=10", 20, d),
            start_oha("topics_hpc", f"{b}/v1/models/{hpc}/topics?n=10", 20, d),
            start_oha("predict_lda", f"{b}/v1/models/{lda}/predict", 6, d, "POST", {"documents": short}),
            start_oha("predict_hpc", f"{b}/v1/models/{hpc}/predict", 6, d, "POST", {"documents": short}),
            start_oha("job_poll", f"{b}/v1/jobs/{job['id']}", 8, d),
            start_oha("upload", f"{b}/v1/corpora", 4, d, "POST", upload),
        ]
        it0 = job["progress"]["iteration"]
        rows = run(procs)
        job = svc.req("GET", f"/v1/jobs/{job['id']}")
        fit_ran = job["status"] == "running"
        note = (f"fit running throughout: {fit_ran} (LDA K=100 on AppStream, sweeps {it0} → {job['progress']['iteration']} "
                f"during the load, threads {job['params'].get('threads')})")
        report.append(table(f"Mixed load, 64 clients, {d} s, while a fit runs", rows) + "\n\n" + note)
        print(report[-1], "\n", file=sys.stderr)

        rows = run([start_oha("topics_only_fit", f"{b}/v1/models/{lda}/topics?n=10", 64, d)])
        report.append(table(f"GET /v1/models/{{lda}}/topics?n=10 alone, 64 clients, {d} s, the fit still running", rows))
        print(report[-1], "\n", file=sys.stderr)
        svc.req("POST", f"/v1/jobs/{job['id']}/cancel", {})
        time.sleep(1)
        rows = run([start_oha("topics_only", f"{b}/v1/models/{lda}/topics?n=10", 64, d)])
        report.append(table(f"GET /v1/models/{{lda}}/topics?n=10 alone, 64 clients, {d} s, no fit running", rows))
        print(report[-1], "\n", file=sys.stderr)
    finally:
        svc.stop()
    text = "\n\n".join(report) + "\n"
    with open(os.path.join(OUT, "load.md"), "w") as f:
        f.write(text)
    print(text)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
