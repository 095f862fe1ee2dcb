#!/usr/bin/env python3
"""Prediction throughput of LDA and HPC on short documents (issue 16, item 6).

Usage: python3 bench/predict_throughput.py BINARY [--passes 3] [--batch 100] [--clients 2]

Fits once on a fresh database (../shared/data/appstream.jsonl as NDJSON, english stop
words, min_df 2; LDA K = 20, 200 sweeps; HPC 40 scans), then for each server
configuration restarts `BINARY serve --rate-limit-per-s 0` on that database and
predicts every AppStream summary (the second line of each text, a sentence or so;
2 016 documents) --passes times, in requests of --batch documents with the default
predict options (LDA: 100 fold-in sweeps), from --clients concurrent client threads so
the server always has a request waiting. Configurations:

* `--threads 1`: the predict pool has one thread (JSON decoding and encoding run on
  tokio's threads beside it);
* `--threads 1` pinned with `taskset -c 0`: the whole server on one core;
* `--threads 2`: the predict pool on both cores.

Reported per model and configuration: documents per second of wall time, the server's
CPU seconds (utime + stime from /proc/PID/stat) and documents per server CPU second,
i.e. per core fully used. One request first warms the model cache (untimed). Responses
are checked for 200 and counted by their `topic_proportions` keys (one per
prediction, checked against the parsed warm-up answer), not parsed, so the Python client
keeps up with the server. Output: a Markdown table on
stdout and bench/out/predict_throughput.md.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from topicd_service import APPSTREAM, Service, appstream_summaries, wait_up  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


class FlagService(Service):
    def __init__(self, binary, db, port, extra, prefix=()):
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([*prefix, binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", db, *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_up(self.base + "/healthz")

    def cpu_s(self):
        f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK


KEY = b'"topic_proportions"'


def post(base, path, body):
    """The response's bytes (200 checked); not parsed, so the client keeps up."""
    r = urllib.request.Request(base + path, data=body, method="POST", headers={"content-type": "application/json"})
    with urllib.request.urlopen(r, timeout=600) as f:
        assert f.status == 200, f.status
        return f.read()


def measure(svc, model, batches, clients):
    warm = json.loads(post(svc.base, f"/v1/models/{model}/predict", batches[0]))
    assert len(warm["predictions"]) == post(svc.base, f"/v1/models/{model}/predict", batches[0]).count(KEY)
    todo = list(enumerate(batches))
    lock = threading.Lock()
    done = [0]

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                _, b = todo.pop()
            out = post(svc.base, f"/v1/models/{model}/predict", b)
            with lock:
                done[0] += out.count(KEY)  # one per prediction (checked on the warm-up)

    c0, t0 = svc.cpu_s(), time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall, cpu = time.perf_counter() - t0, svc.cpu_s() - c0
    return done[0], wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--port", type=int, default=18241)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="topicd-predict-")
    db = os.path.join(tmp, "t.db")
    svc = FlagService(args.binary, db, args.port, ["--rate-limit-per-s", "0"])
    try:
        corpus = svc.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first&stopwords=english&min_df=2")
        models = {"lda": svc.fit(corpus["id"], "lda", {"topics": 20, "iterations": 200})["model_id"],
                  "hpc": svc.fit(corpus["id"], "hpc", {"iterations": 40})["model_id"]}
    finally:
        svc.stop()
    docs = appstream_summaries() * args.passes
    batches = [json.dumps({"documents": docs[i:i + args.batch]}).encode() for i in range(0, len(docs), args.batch)]
    words = sum(len(d["text"].split()) for d in docs) / len(docs)
    configs = [("--threads 1", ["--threads", "1"], ()),
               ("--threads 1, taskset -c 0", ["--threads", "1"], ("taskset", "-c", "0")),
               ("--threads 2", ["--threads", "2"], ())]
    lines = [f"{len(docs)} documents ({args.passes} × {len(docs) // args.passes} AppStream summaries, {words:.1f} words on average "
             f"before preprocessing), {args.batch} per request, {args.clients} clients; load average before: "
             f"{os.getloadavg()[0]:.2f}", "",
             "| model | server | docs | wall s | docs/s | server CPU s | docs per CPU s | ≥ 1 000 per CPU s |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for label, extra, prefix in configs:
        svc = FlagService(args.binary, db, args.port, ["--rate-limit-per-s", "0", *extra], prefix)
        try:
            for name, model in models.items():
                n, wall, cpu = measure(svc, model, batches, args.clients)
                assert n == len(docs), (n, len(docs))
                per_core = n / cpu if cpu > 0 else float("nan")
                ok = per_core >= 1000
                lines.append(f"| {name} | {label} | {n} | {wall:.2f} | {n / wall:.0f} | {cpu:.2f} | {per_core:.0f} | "
                             f"{'yes' if ok else 'no'} |")
                print(lines[-1], file=sys.stderr)
        finally:
            svc.stop()
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    with open(os.path.join(HERE, "out", "predict_throughput.md"), "w") as f:
        f.write(text)
    print(text)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
