#!/usr/bin/env python3
"""Checkpoint overhead of the pass driver (issue 14): the same HDP fit on linuxdoc through
the HTTP service with checkpoint_every_s = 0 (off) and = 60 (the default), alternating,
two runs each; prints one JSON line per fit (seconds, checkpoints stored, the largest
checkpoint's bytes read from the database while the job runs).
Usage: python3 bench/vi_checkpoint_overhead.py target/release/topicd
bench/out/linuxdoc_bow.jsonl [passes=50] (bench/prepare_linuxdoc.py makes the corpus).
The fit: K = 50, gensim's priors (alpha 1, gamma 1, lambda 0.01), one batch, one thread,
seed 1, as the HDP timing benchmark (bench/hdp_vs_gensim.sh)."""
import json, os, sqlite3, subprocess, sys, tempfile, time, urllib.request
binary, bow = sys.argv[1], sys.argv[2]
passes = int(sys.argv[3]) if len(sys.argv) > 3 else 50
tmp = tempfile.mkdtemp(); port = 23998; base = f"http://127.0.0.1:{port}"
db = os.path.join(tmp, "db.sqlite")
srv = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", db, "--threads", "1"], stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
def req(m, p, body=None, ct="application/json"):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    r = urllib.request.Request(base + p, data=data, method=m)
    if data is not None: r.add_header("content-type", ct)
    with urllib.request.urlopen(r, timeout=3600) as f: return json.loads(f.read() or b"null")
def stored_checkpoint(job_id):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
        return c.execute("SELECT iteration, length(data) FROM checkpoints WHERE job_id = ?", (job_id,)).fetchone()
try:
    for _ in range(100):
        try: urllib.request.urlopen(base + "/healthz", timeout=1); break
        except Exception: time.sleep(0.1)
    c = req("POST", "/v1/corpora?name=linuxdoc&stopwords=none&min_df=1", open(bow, "rb").read(), "application/x-ndjson")
    params = {"topics": 50, "alpha": 1, "gamma": 1, "lambda": 0.01, "passes": passes, "batches": 1, "threads": 1}
    for rep in range(2):
        for every in (0, 60):
            t = time.time()
            j = req("POST", "/v1/jobs", {"corpus_id": c["id"], "model": "hdp", "params": dict(params, checkpoint_every_s=every), "seed": 1})
            seen = set(); largest = 0
            while j["status"] not in ("succeeded", "failed"):
                time.sleep(0.5); j = req("GET", f"/v1/jobs/{j['id']}")
                row = stored_checkpoint(j["id"])
                if row: seen.add(row[0]); largest = max(largest, row[1])
            print(json.dumps({"checkpoint_every_s": every, "seconds": round(time.time() - t, 2), "checkpoints_seen": sorted(seen), "checkpoint_bytes": largest, "status": j["status"]}), flush=True)
finally:
    srv.terminate(); srv.wait()
