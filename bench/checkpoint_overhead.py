#!/usr/bin/env python3
"""Checkpoint overhead (issue 14): the same LDA fit on linuxdoc through the HTTP service with
checkpoint_every_s = 0 (off) and = 10 (six times more often than the default),
alternating, two runs each; prints one JSON line per fit (seconds, checkpoints seen by
polling the job). Usage: python3 bench/checkpoint_overhead.py target/release/topicd
bench/out/linuxdoc_bow.jsonl [sweeps=300] (bench/prepare_linuxdoc.py makes the corpus)."""
import json, os, subprocess, sys, tempfile, time, urllib.request
binary, bow = sys.argv[1], sys.argv[2]
iters = int(sys.argv[3]) if len(sys.argv) > 3 else 300
tmp = tempfile.mkdtemp(); port = 23999; base = f"http://127.0.0.1:{port}"
srv = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", os.path.join(tmp, "db.sqlite"), "--threads", "1"], stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
def req(m, p, body=None, ct="application/json"):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    r = urllib.request.Request(base + p, data=data, method=m)
    if data is not None: r.add_header("content-type", ct)
    with urllib.request.urlopen(r, timeout=3600) as f: return json.loads(f.read() or b"null")
try:
    for _ in range(100):
        try: urllib.request.urlopen(base + "/healthz", timeout=1); break
        except Exception: time.sleep(0.1)
    c = req("POST", "/v1/corpora?name=linuxdoc&stopwords=none&min_df=1", open(bow, "rb").read(), "application/x-ndjson")
    for rep in range(2):
        for every in (0, 10):
            t = time.time()
            j = req("POST", "/v1/jobs", {"corpus_id": c["id"], "model": "lda", "params": {"topics": 100, "alpha": 0.5, "beta": 0.01, "iterations": iters, "threads": 1, "checkpoint_every_s": every}, "seed": 1})
            ck = 0; last = None
            while j["status"] not in ("succeeded", "failed"):
                time.sleep(0.5); j = req("GET", f"/v1/jobs/{j['id']}")
                cp = (j.get("progress") or {}).get("checkpoint")
                if cp and cp != last: ck += 1; last = cp
            print(json.dumps({"checkpoint_every_s": every, "seconds": round(time.time() - t, 2), "checkpoints_seen": ck, "status": j["status"]}), flush=True)
finally:
    srv.terminate(); srv.wait()
