#!/usr/bin/env python3
"""A crowd on a fresh model (issue 40): what the server's memory and latency do when
many clients open a model nobody has read yet, when a model is larger than the model
cache, and when two fits together need more than the fits' memory budget.

Steps, each on a server started afresh on the same SQLite file (so every model is cold
and the process' peak resident memory, VmHWM, is the scenario's own):

1. fit: AppStream (../shared/data/appstream.jsonl, every document with its label paths)
   uploaded and fitted with HPC (--scans scans), the way a team's model arrives.
2. one cold read: one `GET /v1/models/{id}/topics?n=10&rank=frex&weight=0.5`: its time
   and the server's peak memory. The anchor of the crowd.
3. 64 cold reads at once (released together by a barrier): the slowest answer and the
   peak memory, against 3 x one cold read + 0.5 s and 1.5 x the one-reader peak.
4. one cold predict of 100 documents, then 64 at once: the same two figures.
5. warm: 64 clients reading topics for --warm-s seconds (rate limit off): p99 latency,
   from `oha` when it is installed (`cargo install oha --locked`), else from Python
   clients, and from the server's own histogram (the share answered within 10 ms).
6. a model larger than the cache: the server started with --model-cache-mb below the
   model's size, 64 clients read topics: every answer equal to the uncached server's,
   peak memory within the one-reader peak + the budget + one model.
7. two HPC fits whose estimates together exceed --fit-memory-mb (the budget set to 1.5x
   one estimate): the second waits (its job says why) until the first ends, both
   succeed, and the server's memory above its idle level stays under the budget.

    python3 bench/cold_crowd.py --bin target/release/topicd [--scans 60] [--warm-s 10]

Prints a Markdown table per scenario; the rate limit is off (--rate-limit-per-s 0) in
every scenario, as the issue's figures are. Standard library only.
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
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPSTREAM = os.path.join(ROOT, "..", "shared", "data", "appstream.jsonl")
DOCUMENT_KEYS = ("id", "text", "labels", "paths", "counts", "bow", "split", "features")
TOPICS = "/topics?n=10&rank=frex&weight=0.5"


class Server:
    """`topicd serve` on a free port over `db`, with `flags`; stopped by `stop`."""

    def __init__(self, binary, db, flags=(), log=None, rate_limited=False):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        limit = [] if rate_limited else ["--rate-limit-per-s", "0"]
        cmd = [binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", db, *limit, "--request-timeout-s", "0", *flags]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "a") if log else subprocess.DEVNULL)
        for _ in range(600):
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=1)
                return
            except Exception:
                time.sleep(0.05)
        raise SystemExit("the server did not start")

    def status(self, field):
        """A field of /proc/PID/status, in bytes (VmRSS, VmHWM)."""
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(field)

    def req(self, method, path, body=None, ct="application/json"):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            r.add_header("content-type", ct)
        with urllib.request.urlopen(r, timeout=600) as f:
            return f.status, f.read()

    def json(self, method, path, body=None, ct="application/json"):
        return json.loads(self.req(method, path, body, ct)[1] or b"null")

    def metrics(self):
        return self.req("GET", "/metrics")[1].decode()

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def crowd(n, call):
    """`call()` from `n` threads released at once: (seconds of the slowest, answers)."""
    barrier = threading.Barrier(n + 1)
    answers = [None] * n
    ends = [0.0] * n

    def run(i):
        barrier.wait()
        try:
            answers[i] = call()
        except urllib.error.HTTPError as e:
            answers[i] = (e.code, e.read())
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return max(ends) - start, answers


def mb(b):
    return b / 1048576


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def prepare(binary, tmp, scans, threads):
    """Upload AppStream and fit HPC: (db path, model id, corpus id, fit params)."""
    db = os.path.join(tmp, "crowd.db")
    s = Server(binary, db, ["--threads", str(threads)])
    lines = []
    for line in open(APPSTREAM, encoding="utf-8"):
        d = json.loads(line)
        lines.append(json.dumps({k: v for k, v in d.items() if k in DOCUMENT_KEYS}))
    corpus = s.json("POST", "/v1/corpora?name=appstream&duplicate_ids=keep_first", "\n".join(lines).encode(), "application/x-ndjson")
    params = {"iterations": scans, "threads": threads}
    job = s.json("POST", "/v1/jobs", {"corpus_id": corpus["id"], "model": "hpc", "params": params, "seed": 1})
    t0 = time.time()
    while job["status"] not in ("succeeded", "failed", "cancelled"):
        time.sleep(1)
        job = s.json("GET", f"/v1/jobs/{job['id']}")
    if job["status"] != "succeeded":
        raise SystemExit(f"the HPC fit ended {job['status']}: {job.get('error')}")
    print(f"fitted HPC on AppStream ({scans} scans) in {time.time() - t0:.0f} s; estimate {mb(job.get('memory_estimate_bytes') or 0):.0f} MB", flush=True)
    s.stop()
    return db, job["model_id"], corpus["id"], params, job.get("memory_estimate_bytes")


def predict_body(n=100):
    docs = []
    for line in open(APPSTREAM, encoding="utf-8"):
        d = json.loads(line)
        docs.append({"text": d["text"]})
        if len(docs) == n:
            break
    return {"documents": docs}


def cold(binary, db, model, n, path, body=None, flags=(), then_warm=False):
    """`n` concurrent first requests on a fresh server: (slowest s, peak bytes, answers,
    metrics), and with `then_warm` the seconds of one more request after them."""
    s = Server(binary, db, flags)
    method = "GET" if body is None else "POST"
    slowest, answers = crowd(n, lambda: s.req(method, f"/v1/models/{model}{path}", body))
    peak = s.status("VmHWM")
    if then_warm:
        t = time.perf_counter()
        s.req(method, f"/v1/models/{model}{path}", body)
        answers.append(time.perf_counter() - t)
    m = s.metrics()
    s.stop()
    bad = [a[0] for a in answers if isinstance(a, tuple) and a[0] != 200]
    if bad:
        raise SystemExit(f"{len(bad)} of {n} requests failed: {sorted(set(bad))}")
    return slowest, peak, answers, m


def warm(binary, db, model, seconds, clients=64, rate_limited=False):
    """Topic reads at `clients` clients after a first read: (p99 ms of the 200s,
    requests/s, source, share of all requests the server answered within 10 ms, share
    answered 429)."""
    s = Server(binary, db, rate_limited=rate_limited)
    url = f"{s.base}/v1/models/{model}{TOPICS}"
    s.req("GET", f"/v1/models/{model}{TOPICS}")
    oha = shutil.which("oha") or (os.path.expanduser("~/.cargo/bin/oha") if os.path.exists(os.path.expanduser("~/.cargo/bin/oha")) else None)
    if oha:
        out = subprocess.run([oha, "-z", f"{seconds}s", "-c", str(clients), "--no-tui", "--output-format", "json", url], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        p99 = r["latencyPercentiles"]["p99"] * 1000
        rps = r["summary"]["requestsPerSec"]
        codes = {int(k): v for k, v in r.get("statusCodeDistribution", {}).items()}
        refused = codes.get(429, 0) / max(1, sum(codes.values()))
        source = "oha"
    else:
        lat = []
        lock = threading.Lock()
        stop = time.time() + seconds

        codes = {}

        def loop():
            mine, mine_codes = [], {}
            while time.time() < stop:
                t = time.perf_counter()
                try:
                    urllib.request.urlopen(url, timeout=60).read()
                    code = 200
                except urllib.error.HTTPError as e:
                    e.read()
                    code = e.code
                mine_codes[code] = mine_codes.get(code, 0) + 1
                if code == 200:
                    mine.append(time.perf_counter() - t)
            with lock:
                lat.extend(mine)
                for c, n in mine_codes.items():
                    codes[c] = codes.get(c, 0) + n

        threads = [threading.Thread(target=loop) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lat.sort()
        p99 = lat[int(0.99 * (len(lat) - 1))] * 1000 if lat else float("nan")
        rps = sum(codes.values()) / seconds
        refused = codes.get(429, 0) / max(1, sum(codes.values()))
        source = "Python clients (GIL-bound: an upper bound)"
    if rate_limited:
        time.sleep(3)  # the client's burst refills before /metrics, which counts too
    text = s.metrics()
    route = 'route="/v1/models/{id}/topics"'
    within = total = None
    for line in text.splitlines():
        if line.startswith("topicd_http_request_duration_seconds_bucket") and route in line and 'le="0.01"' in line:
            within = float(line.split()[1])
        if line.startswith("topicd_http_request_duration_seconds_count") and route in line:
            total = float(line.split()[1])
    s.stop()
    return p99, rps, source, within / total if total else None, refused


def two_fits(binary, db, corpus, params, estimate, threads):
    """Two HPC fits at once under a budget of 1.5 estimates."""
    budget_mb = 1.5 * estimate / 1048576
    s = Server(binary, db, ["--max-jobs", "2", "--threads", str(threads), "--fit-memory-mb", f"{budget_mb:.1f}"])
    idle = s.status("VmRSS")
    jobs = [s.json("POST", "/v1/jobs", {"corpus_id": corpus, "model": "hpc", "params": params, "seed": seed}) for seed in (2, 3)]
    peak, waited, overlap = idle, None, False
    while True:
        states = [s.json("GET", f"/v1/jobs/{j['id']}") for j in jobs]
        peak = max(peak, s.status("VmRSS"))
        if states[1]["status"] == "queued" and states[1].get("waiting") and states[0]["status"] == "running":
            waited = states[1]["waiting"]
        if all(st["status"] == "running" for st in states):
            overlap = True
        if all(st["status"] in ("succeeded", "failed", "cancelled") for st in states):
            break
        time.sleep(0.02)
    s.stop()
    return budget_mb, mb(peak - idle), waited, overlap, [st["status"] for st in states]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "topicd"))
    ap.add_argument("--scans", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warm-s", type=int, default=10)
    ap.add_argument("--keep", help="keep the database in this folder (and reuse a fitted one there)")
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="cold_crowd")
    os.makedirs(tmp, exist_ok=True)
    state = os.path.join(tmp, "state.json")
    if os.path.exists(state):
        db, model, corpus, params, estimate = json.load(open(state))
    else:
        db, model, corpus, params, estimate = prepare(args.bin, tmp, args.scans, args.threads)
        json.dump([db, model, corpus, params, estimate], open(state, "w"))

    rows = []
    one_t, one_peak, one, _ = cold(args.bin, db, model, 1, TOPICS)
    crowd_t, crowd_peak, answers, m = cold(args.bin, db, model, 64, TOPICS)
    same = all(a[1] == one[0][1] for a in answers)
    loads = metric(m, "topicd_model_cache_loads_total")
    model_bytes = metric(m, "topicd_model_cache_bytes")
    rows.append(("topics, 1 cold reader", one_t, mb(one_peak), "", ""))
    rows.append(("topics, 64 cold readers", crowd_t, mb(crowd_peak), f"{crowd_t <= 3 * one_t + 0.5} (≤ {3 * one_t + 0.5:.2f} s)", f"{crowd_peak <= 1.5 * one_peak} (≤ {mb(1.5 * one_peak):.0f} MB)"))
    body = predict_body()
    p1_t, p1_peak, p1, _ = cold(args.bin, db, model, 1, "/predict", body, then_warm=True)
    warm_predict = p1.pop()
    p64_t, p64_peak, p64, pm = cold(args.bin, db, model, 64, "/predict", body)
    same_predict = all(a[1] == p1[0][1] for a in p64)
    work = p1_t + 63 * warm_predict + 0.5
    rows.append(("predict 100 docs, 1 cold client", p1_t, mb(p1_peak), f"(then one warm: {warm_predict:.3f} s)", ""))
    rows.append(("predict 100 docs, 64 cold clients", p64_t, mb(p64_peak), f"{p64_t <= 3 * p1_t + 0.5} (≤ {3 * p1_t + 0.5:.2f} s); ≤ one cold + 63 warm + 0.5 s: {p64_t <= work} ({work:.2f} s)", f"{p64_peak <= 1.5 * p1_peak} (≤ {mb(1.5 * p1_peak):.0f} MB)"))
    print(f"\nModel: HPC on AppStream, {mb(model_bytes or 0):.0f} MB decoded with its first page; loads for 64 cold readers: {loads:.0f} (topics), "
          f"{metric(pm, 'topicd_model_cache_loads_total'):.0f} (predict); every crowd answer equal to the single reader's: {same and same_predict}\n")
    print("| scenario | slowest answer (s) | server peak memory (MB) | slowest ≤ 3 × one + 0.5 s | peak ≤ 1.5 × one reader |")
    print("|---|---|---|---|---|")
    for name, t, peak, a, b in rows:
        print(f"| {name} | {t:.2f} | {peak:.0f} | {a} | {b} |")

    p99, rps, source, share, _ = warm(args.bin, db, model, args.warm_s)
    print(f"\nWarm, 64 clients for {args.warm_s} s, rate limit off: p99 {p99:.1f} ms ({source}), {rps:.0f} requests/s; "
          f"the server answered {100 * share:.2f} % within 10 ms (its histogram)")
    p99, rps, source, share, refused = warm(args.bin, db, model, args.warm_s, rate_limited=True)
    print(f"Warm, 64 clients from one address for {args.warm_s} s, default rate limit (100/s, burst 200): {100 * refused:.1f} % answered 429, "
          f"{rps:.0f} requests/s in all, p99 of the 200s {p99:.1f} ms ({source})")

    budget = max(1.0, 0.5 * mb(model_bytes or 2 * 1048576))
    big_t, big_peak, big, bm = cold(args.bin, db, model, 64, TOPICS, flags=["--model-cache-mb", f"{budget:.1f}"])
    correct = all(a[1] == one[0][1] for a in big)
    bound = one_peak + budget * 1048576 + (model_bytes or 0)
    print(f"\nModel larger than the cache (--model-cache-mb {budget:.1f}, model {mb(model_bytes or 0):.0f} MB), 64 readers: answers correct {correct}; "
          f"slowest {big_t:.2f} s; peak {mb(big_peak):.0f} MB ≤ one-reader peak + budget + one model ({mb(bound):.0f} MB): {big_peak <= bound}; "
          f"kept bytes {metric(bm, 'topicd_model_cache_bytes'):.0f}, not kept {metric(bm, 'topicd_model_cache_not_kept_total'):.0f}, loads {metric(bm, 'topicd_model_cache_loads_total'):.0f}")

    if estimate:
        budget_mb, above_idle, waited, overlap, statuses = two_fits(args.bin, db, corpus, params, estimate, args.threads)
        print(f"\nTwo HPC fits, estimate {mb(estimate):.0f} MB each, --fit-memory-mb {budget_mb:.0f} --max-jobs 2: statuses {statuses}; "
              f"ran together: {overlap}; the second waited: {bool(waited)} ({waited!r}); peak above idle {above_idle:.0f} MB ≤ budget: {above_idle <= budget_mb}")
    else:
        print("\nThe fit's job carries no memory estimate: the two-fit scenario needs a build with fit admission.")


if __name__ == "__main__":
    sys.exit(main())
