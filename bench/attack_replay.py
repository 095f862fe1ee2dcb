#!/usr/bin/env python3
"""Replays the outsider's attacks on topicd (the findings of the security review) against
a release build, one probe per attack, and says whether each is now refused or bounded.

    cargo build --release --locked
    python3 bench/attack_replay.py [--binary target/release/topicd] [--only PROBE,...] [--keep]

Every server is the script's own: `topicd serve --addr 127.0.0.1:PORT --db TMP/x.db`
(a free port, only 127.0.0.1) with the flags the probe needs; tokens come from
`topicd token create`, the data from a synthetic corpus of 300 documents uploaded as
JSON and a short LDA fit (K = 5, 20 sweeps). Probes that measure memory or time get a
fresh server, so the peak resident memory (VmHWM from /proc/PID/status, read after the
probe) is the probe's own; the small refusals share one server (its peak is cumulative).

 1. predict: `{"documents":[{"counts":{"git":4000000000}}]}` with --request-memory-mb 64
    (422 naming documents[0].counts, no memory); a predict of 5 M counted tokens with a
    normal predict timed beside it (the normal one answered within 1 s); one predict at
    exactly the default --max-predict-work (200 documents × 250 counted tokens ×
    100 iterations × 50 topics = 2.5e8) on an LDA of 50 topics, fitted on a fresh server at topicd's
    defaults (its own database, rate limit left on), with a normal predict 0.05 s after it
    (both 200, each under 1 s), then with `"iterations": 101` (422 naming iterations), then
    again with --threads 2 given; 20 concurrent 20 MB predict bodies with a 64 MB budget
    (peak memory bounded by the budget).
 2. 300 requests with made-up 100 KB methods on made-up paths, then the size of /metrics.
 3. NDJSON: a 4 MB line sent in 1 KB chunks (time); a 2 MB line with --max-line-mb 1
    (413 naming the line); an upload that stops sending with --upload-idle-s 2 (time to
    be cut off).
 4. Rate limit (--auth required --rate-limit-per-s 50 --rate-limit-burst 50): 600
    requests with random fake token keys (how many 429); a flood of 600 with a victim's
    public key prefix `tpd_<key>_...` from 127.0.0.2, then the victim's own 20 requests
    (how many 429).
 5. `Host: attacker.example` on a loopback server (421); cancel with text/plain or a
    form type (415) and with a cross-site Origin (403).
 6. A topic renamed `=HYPERLINK("x")` in the topics CSV (`'=`); a JSON array corpus
    body, `?name=a&name=b` on an NDJSON upload, a 100 KB corpus name and lda
    `beta: 1e308` (422s); Cache-Control on an authenticated GET (no-store); `topicd token
    list --db postgres://u:secret@...` (no `secret` printed); headers sent a byte a
    second with --header-read-timeout-s 2 (closed); 2000 idle sockets against
    --max-connections 100 (at most 100 held), then /healthz from a new connection.

Prints one line per probe as it ends and a Markdown table at the end; exits 1 when any
probe missed its expectation (2 when the setup failed). A memory guard kills a probe's
server above --memory-guard-mb (default 2048), so an unfixed build cannot take the
machine down; every loop is bounded in count and time (about a minute in all on a
fixed build, under three minutes on an unfixed one). Standard library only.
"""
import argparse
import csv
import errno
import http.client
import io
import json
import os
import random
import re
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MB = 1 << 20
NORMAL_PREDICT = {"documents": [{"text": "git commit branch merge rebase"}]}
THEMES = [
    "git commit branch merge rebase repository clone push pull tag diff patch",
    "kernel driver module memory scheduler interrupt device firmware boot process thread signal",
    "garden flower seed soil water plant tree leaf root compost rose tulip",
    "football match goal player league coach season stadium referee team score penalty",
    "recipe flour butter sugar oven bread cake dough yeast salt pepper onion",
]
TOKEN_RE = re.compile(r"tpd_[0-9a-f]{12}_[0-9a-f]{64}")


class StartError(Exception):
    pass


class Answer:
    """What came back: status (None when nothing did), lower-case headers, body (at most
    the first `keep` bytes), its full length, seconds, and the error if any."""

    def __init__(self, status=None, headers=None, body=b"", length=0, seconds=0.0, error=None):
        self.status, self.headers, self.body, self.length, self.seconds, self.error = status, headers or {}, body, length, seconds, error

    def json(self):
        """The body as a JSON object ({} when it is not one)."""
        try:
            value = json.loads(self.body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def shown(self):
        return str(self.status) if self.status is not None else f"no answer ({self.error})"


def mb(b):
    return f"{b / MB:.0f}" if b is not None else "–"


def hex_digits(n):
    return "".join(random.choice("0123456789abcdef") for _ in range(n))


class Topicd:
    """`topicd serve` on a free 127.0.0.1 port over `db` with `flags`; a watchdog kills it
    when its resident memory passes `guard` bytes (then `guard_tripped` is set).

    Not bench/cold_crowd.py's `Server` nor bench/topicd_service.py's `Service`: those
    always add `--rate-limit-per-s 0` (and `--request-timeout-s 0`), poll a server that
    has already exited for 30 s, and call through urllib, which raises on the 4xx
    answers that are most of what this script reads."""

    def __init__(self, binary, db, tmp, name, flags=(), guard=2048 * MB, rate_limit_off=True):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        extra = ["--rate-limit-per-s", "0"] if rate_limit_off else []
        self.cmd = [binary, "serve", "--addr", f"127.0.0.1:{self.port}", "--db", db, *extra, *flags]
        self.log = os.path.join(tmp, f"{name}.log")
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"))
        self.guard, self.guard_tripped, self.max_rss = guard, None, 0
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                raise StartError(f"`{' '.join(self.cmd[1:])}` exited {self.proc.returncode}: {self.log_tail()}")
            if http_request(self.port, "GET", "/healthz", timeout=1).status == 200:
                break
            if time.time() > deadline:
                self.stop()
                raise StartError(f"`{' '.join(self.cmd[1:])}` did not answer /healthz within 30 s")
            time.sleep(0.05)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while self.proc.poll() is None:
            rss = self.status("VmRSS")
            if rss is not None:
                self.max_rss = max(self.max_rss, rss)
                if rss > self.guard:
                    self.guard_tripped = rss
                    self.proc.kill()
                    return
            time.sleep(0.02)

    def status(self, field):
        """A field of /proc/PID/status in bytes (VmHWM, VmRSS); None once the process is gone."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def peak(self):
        """VmHWM, or the watchdog's highest reading when the process is gone."""
        hwm = self.status("VmHWM") if self.proc.poll() is None else None
        return hwm if hwm is not None else (self.max_rss or None)

    def cpu_seconds(self):
        """User and system CPU seconds of the process so far (None once it is gone)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    def fds(self):
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return None

    def alive(self):
        return self.proc.poll() is None

    def log_tail(self, n=400):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode(errors="replace")[-n:].strip().replace("\n", " | ")
        except OSError:
            return ""

    def req(self, method, path, body=None, headers=None, timeout=30, keep=1 << 20):
        return http_request(self.port, method, path, body, headers, timeout, keep=keep)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def http_request(port, method, path, body=None, headers=None, timeout=30, source=None, keep=1 << 20):
    """One request on a new connection; never raises."""
    headers = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=source)
    try:
        conn.request(method, path, body=body, headers=headers)
        return read_answer(conn.getresponse(), t, keep)
    except (OSError, http.client.HTTPException) as e:
        return Answer(seconds=time.perf_counter() - t, error=type(e).__name__)
    finally:
        conn.close()


def read_answer(resp, t, keep):
    kept, length = [], 0
    while True:
        chunk = resp.read(MB)
        if not chunk:
            break
        if length < keep:
            kept.append(chunk[: keep - length])
        length += len(chunk)
    headers = {k.lower(): v for k, v in resp.getheaders()}
    return Answer(resp.status, headers, b"".join(kept), length, time.perf_counter() - t)


class Client:
    """A kept-alive connection for loops of requests, reopened after any failure."""

    def __init__(self, port, source=None, timeout=10):
        self.port, self.source, self.timeout, self.conn = port, source, timeout, None

    def get(self, path, headers):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout, source_address=self.source)
            t = time.perf_counter()
            try:
                self.conn.request("GET", path, headers=headers)
                return read_answer(self.conn.getresponse(), t, 1 << 16)
            except (OSError, http.client.HTTPException) as e:
                self.conn.close()
                self.conn = None
                if attempt:
                    return Answer(seconds=time.perf_counter() - t, error=type(e).__name__)

    def close(self):
        if self.conn is not None:
            self.conn.close()


END_OF_HEAD = b"\r\n\r\n"


def parse_raw(data):
    """(status, headers, body) of a raw HTTP/1.1 answer, or None while its head is incomplete."""
    head, sep, body = data.partition(END_OF_HEAD)
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def raw_exchange(port, head, body=b"", chunk=64 * 1024, timeout=30, then_wait=None):
    """Send `head` and `body` in `chunk`-byte pieces on a raw socket, watching for an answer
    that comes before the body is all sent (the server refusing early); then read the
    answer until the connection closes or its Content-Length is in. `then_wait` (seconds
    since the last byte sent) is returned too: how long the server took to answer or close.
    Never raises; an Answer with status None when none came."""
    t = time.perf_counter()
    data, err = b"", None
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError as e:
        return Answer(seconds=time.perf_counter() - t, error=f"{type(e).__name__} connecting"), None
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ)
    closed = False
    try:
        s.sendall(head)
        view = memoryview(body)
        for i in range(0, len(view), chunk):
            if sel.select(0):
                break  # an answer (or a close) before the body was sent
            s.sendall(view[i:i + chunk])
    except OSError as e:
        err = f"{type(e).__name__} sending"
    last_sent = time.perf_counter()
    deadline = last_sent + timeout
    while time.perf_counter() < deadline:
        if not sel.select(max(0.0, deadline - time.perf_counter())):
            continue
        try:
            got = s.recv(1 << 20)
        except OSError as e:
            err = err or f"{type(e).__name__} reading"
            closed = True
            break
        if not got:
            closed = True
            break
        data += got
        parsed = parse_raw(data)
        if parsed and "content-length" in parsed[1] and len(parsed[2]) >= int(parsed[1]["content-length"]):
            break
    waited = time.perf_counter() - last_sent
    sel.close()
    s.close()
    parsed = parse_raw(data)
    if parsed is None:
        return Answer(seconds=time.perf_counter() - t, error=err or ("closed" if closed else "timeout")), waited
    status, headers, rest = parsed
    if "chunked" in headers.get("transfer-encoding", "").lower():
        rest = dechunk(rest)
    return Answer(status, headers, rest, len(rest), time.perf_counter() - t, err), waited


def dechunk(data):
    """The body of a chunked answer (as much of it as arrived)."""
    out = b""
    while data:
        size, sep, data = data.partition(b"\r\n")
        try:
            n = int(size.split(b";")[0], 16)
        except ValueError:
            break
        if not sep or n == 0:
            break
        out += data[:n]
        data = data[n + 2:]
    return out


def post_head(port, path, length, ctype="application/json"):
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n").encode()


def problem(a):
    """`field`/`limit`/`line` of a problem+json answer, for the table."""
    j = a.json()
    bits = [f"{k} {j[k]}" for k in ("field", "limit", "line") if j.get(k) is not None]
    return f" ({', '.join(bits)})" if bits else ""


# ----------------------------------------------------------------------------- setup


def synthetic_corpus(n=300):
    rng = random.Random(1)
    themes = [t.split() for t in THEMES]
    docs = []
    for i in range(n):
        a, b = rng.randrange(5), rng.randrange(5)
        words = [rng.choice(themes[a] if rng.random() < 0.8 else themes[b]) for _ in range(30)]
        docs.append({"id": f"d{i}", "text": " ".join(words)})
    return docs


def make_token(binary, db, name, role):
    out = subprocess.run([binary, "token", "create", "--db", db, "--name", name, "--role", role], capture_output=True, text=True, timeout=60)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    m = TOKEN_RE.search(lines[-1]) if lines else None
    if out.returncode != 0 or not m:
        raise StartError(f"topicd token create --name {name} failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    return m.group(0)


def setup(binary, tmp):
    """The database every probe's server opens: tokens, a corpus and an LDA model."""
    db = os.path.join(tmp, "x.db")
    tokens = {name: make_token(binary, db, name, role) for name, role in (("writer", "write"), ("victim", "write"), ("reader", "read"), ("admin", "admin"))}
    srv = Topicd(binary, db, tmp, "setup")
    try:
        a = srv.req("POST", "/v1/corpora", {"name": "attack-replay", "documents": synthetic_corpus()})
        if a.status != 201:
            raise StartError(f"corpus upload: {a.shown()} {a.body[:300]!r}")
        corpus = a.json().get("id") or "missing"
        job = fit_lda(srv, corpus, {"topics": 5, "iterations": 20})
        return db, tokens, corpus, job["model_id"], job["id"]
    finally:
        srv.stop()


def fit_lda(srv, corpus, params):
    """Fit an LDA (seed 1) on `srv` and wait for its model: the finished job."""
    a = srv.req("POST", "/v1/jobs", {"corpus_id": corpus, "model": "lda", "params": params, "seed": 1})
    if a.status not in (200, 201, 202):
        raise StartError(f"fit submission: {a.shown()} {a.body[:300]!r}")
    job = a.json()
    deadline = time.time() + 120
    while not job.get("model_id"):
        if job.get("status") in ("failed", "cancelled") or time.time() > deadline:
            raise StartError(f"the LDA fit ended {job.get('status')}: {job.get('error')}")
        time.sleep(0.2)
        job = srv.req("GET", f"/v1/jobs/{job['id']}").json() or job
    return job


# ----------------------------------------------------------------------------- probes


class Run:
    """The probes' shared context and their rows."""

    def __init__(self, args, tmp, db, tokens, corpus, model):
        self.args, self.tmp, self.db, self.tokens, self.corpus, self.model = args, tmp, db, tokens, corpus, model
        self.rows = []
        self.n = 0

    def server(self, name, flags=(), rate_limit_off=True, db=None):
        self.n += 1
        return Topicd(self.args.binary, db or self.db, self.tmp, f"{self.n:02d}-{name}", flags, self.args.memory_guard_mb * MB, rate_limit_off)

    def row(self, probe, expected, seen, seconds, srv, ok, shared=False):
        peak = None
        if srv is not None:
            peak = srv.peak()
            if srv.guard_tripped:
                seen += f"; server killed by the memory guard at {mb(srv.guard_tripped)} MB"
                ok = False
            elif not srv.alive():
                seen += f"; server died ({srv.log_tail(200)})"
                ok = False
        r = {"probe": probe, "expected": expected, "seen": seen, "time": "–" if seconds is None else f"{seconds:.2f} s",
             "peak": mb(peak) + (" (shared)" if shared and peak is not None else ""), "ok": bool(ok)}
        self.rows.append(r)
        print(f"[{'met' if r['ok'] else 'NOT MET'}] {probe}: {seen} | {r['time']} | peak {r['peak']} MB", flush=True)


def warm(srv, model):
    """A normal predict, so the model is decoded before the probe's peak is measured."""
    return srv.req("POST", f"/v1/models/{model}/predict", NORMAL_PREDICT)


def probe_counts_4e9(run):
    srv = run.server("counts-4e9", ["--request-memory-mb", "64"])
    try:
        warm(srv, run.model)
        before = srv.peak()
        body = b'{"documents":[{"counts":{"git":4000000000}}]}'
        a, _ = raw_exchange(srv.port, post_head(srv.port, f"/v1/models/{run.model}/predict", len(body)), body, timeout=60)
        grown = (srv.peak() or 0) - (before or 0)
        j = a.json()
        ok = a.status == 422 and j.get("field") == "documents[0].counts" and j.get("limit") is not None and a.seconds < 1 and grown <= 64 * MB
        run.row("predict `counts: {git: 4e9}` (46 bytes), --request-memory-mb 64",
                "422 naming documents[0].counts and its limit, < 1 s, peak +≤ 64 MB",
                f"{a.shown()}{problem(a)}, peak +{mb(grown)} MB", a.seconds, srv, ok)
    finally:
        srv.stop()


def probe_5m_beside_normal(run):
    srv = run.server("counts-5m")
    try:
        warm(srv, run.model)
        big = {}

        def send_big():
            big["a"] = srv.req("POST", f"/v1/models/{run.model}/predict", {"documents": [{"counts": {"git": 5_000_000}}]}, timeout=60)

        t = threading.Thread(target=send_big)
        t.start()
        time.sleep(0.3)
        normal = srv.req("POST", f"/v1/models/{run.model}/predict", NORMAL_PREDICT, timeout=30)
        t.join(60)
        b = big.get("a") or Answer(error="still running")
        ok = normal.status == 200 and normal.seconds <= 1.0 and b.status is not None and b.status < 500
        run.row("predict of 5 M counted tokens, a normal predict 0.3 s later",
                "the normal predict 200 within 1 s (time is its latency); the big one refused or answered, no 5xx",
                f"normal {normal.shown()}; big {b.shown()}{problem(b)} in {b.seconds:.2f} s", normal.seconds, srv, ok)
    finally:
        srv.stop()


# --max-predict-work at its default: 2.5e8 tokens × fold-in iterations × topics, so
# 50 000 tokens at the default 100 iterations on the probe's 50 topics.
WORK_CAP = 250_000_000
CAP_TOPICS = 50
CAP_TOKENS_PER_DOC = WORK_CAP // (100 * CAP_TOPICS) // 200


def sweeps_cap_body(iterations=None):
    """A predict body at exactly WORK_CAP at 100 iterations on CAP_TOPICS topics: 200
    documents, each with counts over 50 of the synthetic corpus' words (10 of each
    theme, weighted towards a theme of its own) summing to CAP_TOKENS_PER_DOC tokens."""
    rng = random.Random(3)
    themes = [t.split()[:10] for t in THEMES]
    words = [w for t in themes for w in t]
    docs = []
    for i in range(200):
        main = set(themes[i % len(themes)])
        drawn = rng.choices(words, [4 if w in main else 1 for w in words], k=CAP_TOKENS_PER_DOC - len(words))
        counts = {w: 1 + drawn.count(w) for w in words}
        docs.append({"id": f"big{i}", "counts": counts})
    body = {"documents": docs}
    if iterations is not None:
        body["iterations"] = iterations
    return json.dumps(body).encode()


def big_beside_normal(srv, model, body, delay=0.05):
    """The big predict, and a normal one sent `delay` s after it starts: (big, normal,
    how much later than the big one the normal one ended)."""
    path = f"/v1/models/{model}/predict"
    big, started = {}, threading.Event()

    def send_big():
        started.set()
        big["a"] = srv.req("POST", path, body, {"Content-Type": "application/json"}, timeout=60)
        big["end"] = time.perf_counter()

    t = threading.Thread(target=send_big)
    t.start()
    started.wait()
    time.sleep(delay)
    normal = srv.req("POST", path, NORMAL_PREDICT, timeout=30)
    normal_end = time.perf_counter()
    t.join(65)
    b = big.get("a") or Answer(error="still running")
    return b, normal, normal_end - big.get("end", normal_end)


def big_answer_summary(a):
    """Documents, tokens and unknown tokens of a predict answer, as text."""
    preds = a.json().get("predictions") or []
    tokens = sum(p.get("tokens", 0) for p in preds)
    unknown = sum(p.get("unknown_tokens", 0) for p in preds)
    return f"{len(preds)} docs, {tokens} known tokens, {unknown} unknown", unknown == 0 and tokens == WORK_CAP // (100 * CAP_TOPICS)


def probe_sweeps_cap_beside_normal(run):
    """One predict at exactly the default --max-predict-work on an LDA of 50 topics, and a normal predict 0.05 s after it: a fresh server at topicd's defaults
    but for the port and a database of its own; the rate limit left at its default
    (--rate-limit-per-s 100), --threads at its default (all cores), then again on a
    fresh server over the same database with --threads 2 given."""
    db = os.path.join(run.tmp, "sweeps.db")
    body = sweeps_cap_body()
    srv = run.server("sweeps-cap", rate_limit_off=False, db=db)
    try:
        a = srv.req("POST", "/v1/corpora", {"name": "sweeps-cap", "documents": synthetic_corpus()})
        if a.status != 201:
            raise StartError(f"corpus upload: {a.shown()} {a.body[:300]!r}")
        model = fit_lda(srv, a.json().get("id") or "missing", {"topics": CAP_TOPICS, "iterations": 50})["model_id"]
        for threads in (None, 2):
            if threads is not None:
                srv.stop()
                srv = run.server("sweeps-cap-threads-2", ["--threads", str(threads)], rate_limit_off=False, db=db)
            warm(srv, model)
            before, cpu = srv.peak(), srv.cpu_seconds()
            b, normal, later = big_beside_normal(srv, model, body)
            grown = (srv.peak() or 0) - (before or 0)
            cpu = (srv.cpu_seconds() or 0) - (cpu or 0)
            summary, all_known = big_answer_summary(b)
            ok = b.status == 200 and b.seconds < 1.0 and normal.status == 200 and normal.seconds < 1.0 and all_known
            flags = "server defaults, --threads default (all cores)" if threads is None else f"--threads {threads} given"
            run.row(f"predict at exactly --max-predict-work (200 docs × {CAP_TOKENS_PER_DOC} counted tokens × 100 iterations × {CAP_TOPICS} topics) "
                    f"on an LDA of 50 topics, a normal predict 0.05 s later ({flags}; --rate-limit-per-s default)",
                    "both 200, the big one < 1 s, the normal one < 1 s (time is its latency)",
                    f"big {b.shown()}{problem(b)} in {b.seconds:.3f} s ({summary}); normal {normal.shown()} in {normal.seconds:.3f} s, "
                    f"ended {later:+.3f} s after the big one; server CPU {cpu:.2f} s for the two; peak +{mb(grown)} MB over the warm server",
                    normal.seconds, srv, ok)
            if threads is None:
                a = srv.req("POST", f"/v1/models/{model}/predict", sweeps_cap_body(101), {"Content-Type": "application/json"})
                j = a.json()
                run.row("the same big predict with `\"iterations\": 101` (1 % over the cap)",
                        "422 naming iterations with limit max-predict-work",
                        f"{a.shown()}{problem(a)}", a.seconds, srv,
                        a.status == 422 and j.get("field") == "iterations" and j.get("limit") == "max-predict-work", shared=True)
    finally:
        srv.stop()


def probe_20_bodies(run):
    srv = run.server("bodies-20x20mb", ["--request-memory-mb", "64"])
    try:
        warm(srv, run.model)
        before = srv.peak()
        doc = json.dumps(NORMAL_PREDICT).encode()
        # Valid JSON of 20 MB: a small predict padded with whitespace, so the probe
        # measures what holding the bodies costs, not what predicting costs.
        body = doc[:-1] + b" " * (20 * MB - len(doc)) + b"}"
        head = post_head(srv.port, f"/v1/models/{run.model}/predict", len(body))
        answers = [None] * 20
        barrier = threading.Barrier(20)

        def one(i):
            barrier.wait()
            answers[i] = raw_exchange(srv.port, head, body, timeout=90)[0]

        t = time.perf_counter()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        seconds = time.perf_counter() - t
        grown = (srv.peak() or 0) - (before or 0)
        statuses = sorted(a.shown() if a else "no answer" for a in answers)
        counts = {s: statuses.count(s) for s in statuses}
        ok = all(a is not None and a.status in (200, 413, 422) for a in answers) and grown <= 128 * MB
        run.row("20 concurrent 20 MB predict bodies, --request-memory-mb 64",
                "each 200 (or 413/422), peak +≤ 128 MB (2 × the budget)",
                f"{', '.join(f'{v}× {k}' for k, v in counts.items())}; peak +{mb(grown)} MB", seconds, srv, ok)
    finally:
        srv.stop()


def probe_metrics_methods(run):
    srv = run.server("metrics-methods")
    try:
        rng = random.Random(2)
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        marks = []
        t = time.perf_counter()
        statuses = {}
        for i in range(300):
            if time.perf_counter() - t > 60:
                break
            method = "X" + "".join(rng.choice(letters) for _ in range(16)) + "Q" * 100_000
            path = f"/v1/made-up-{hex_digits(16)}"
            marks.append((method[:17], path))
            head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nConnection: close\r\n\r\n".encode()
            a, _ = raw_exchange(srv.port, head, timeout=10)
            statuses[a.shown()] = statuses.get(a.shown(), 0) + 1
        sent = sum(statuses.values())
        m = srv.req("GET", "/metrics", timeout=60, keep=64 * MB)
        text = m.body.decode(errors="replace")
        leaked = sum(1 for meth, path in marks if meth in text or path in text)
        # Answers from the router, not HTTP-level refusals of the head (which the metrics
        # never see, so they would make the probe pass without testing anything).
        routed = sum(v for k, v in statuses.items() if k not in ("400", "413", "414", "431") and k.isdigit())
        ok = m.status == 200 and m.length < MB and leaked == 0 and routed > 0
        run.row("300 requests with made-up 100 KB methods on made-up paths, then GET /metrics",
                "answered by the router, then /metrics under 1 MB with no made-up method or path in it",
                f"{sent} sent ({', '.join(f'{v}× {k}' for k, v in statuses.items())}); /metrics {m.shown()}, {m.length / 1024:.0f} KB, {leaked} leaked",
                m.seconds, srv, ok)
    finally:
        srv.stop()


def ndjson_long_line(n_bytes):
    """An NDJSON body: a normal document, one `n_bytes`-long line, another normal one."""
    words = THEMES[1].split() + THEMES[2].split()
    filler = " ".join(words[i % len(words)] for i in range(n_bytes // 6))
    line = json.dumps({"id": "long", "text": ""})[:-2].encode()
    line += filler.encode()[: n_bytes - len(line) - 2] + b'"}'
    first = json.dumps({"id": "a", "text": THEMES[0]}).encode()
    last = json.dumps({"id": "b", "text": THEMES[3]}).encode()
    return first + b"\n" + line + b"\n" + last + b"\n"


def probe_ndjson_4mb(run):
    srv = run.server("ndjson-4mb-line", ["--max-line-mb", "8"])
    try:
        body = ndjson_long_line(4 * MB)
        head = post_head(srv.port, "/v1/corpora?name=long-line", len(body), "application/x-ndjson")
        a, _ = raw_exchange(srv.port, head, body, chunk=1024, timeout=60)
        ok = a.status == 201 and a.seconds <= 2.0
        run.row("NDJSON upload with a 4 MB line sent in 1 KB chunks (--max-line-mb 8)",
                "201 within 2 s (was 5.3 s)", f"{a.shown()}{problem(a)}", a.seconds, srv, ok)
    finally:
        srv.stop()


def probe_ndjson_cap_and_idle(run):
    srv = run.server("ndjson-cap-idle", ["--max-line-mb", "1", "--upload-idle-s", "2"])
    try:
        body = ndjson_long_line(2 * MB)
        head = post_head(srv.port, "/v1/corpora?name=too-long", len(body), "application/x-ndjson")
        a, _ = raw_exchange(srv.port, head, body, timeout=30)
        j = a.json()
        names_line = j.get("line") == 2 or "line 2" in str(j.get("detail", ""))
        run.row("NDJSON line of 2 MB with --max-line-mb 1", "413 naming line 2",
                f"{a.shown()}{problem(a)}", a.seconds, srv, a.status == 413 and names_line, shared=True)

        part = json.dumps({"id": "a", "text": THEMES[0]}).encode() + b"\n" + b'{"id": "b", "text": "git com'
        head = post_head(srv.port, "/v1/corpora?name=stalled", 10 * MB, "application/x-ndjson")
        a, waited = raw_exchange(srv.port, head + part, timeout=15)
        cut = a.status is not None or a.error != "timeout"
        ok = cut and waited is not None and waited <= 4.0
        run.row("NDJSON upload that stops sending (--upload-idle-s 2)",
                "cut off (408 or closed) within 4 s of the last byte (time is that wait)",
                a.shown() + problem(a), waited, srv, ok, shared=True)
    finally:
        srv.stop()


RATE_FLAGS = ["--auth", "required", "--rate-limit-per-s", "50", "--rate-limit-burst", "50"]


def probe_cache_and_fake_keys(run):
    srv = run.server("fake-keys", RATE_FLAGS, rate_limit_off=False)
    try:
        a = srv.req("GET", "/v1/models", headers={"Authorization": f"Bearer {run.tokens['reader']}"})
        cc = a.headers.get("cache-control", "")
        run.row("Cache-Control of an authenticated GET /v1/models", "200 with Cache-Control: no-store",
                f"{a.shown()}, Cache-Control: {cc or '(none)'}", a.seconds, srv, a.status == 200 and "no-store" in cc, shared=True)
        client = Client(srv.port)
        counts = {}
        t = time.perf_counter()
        for _ in range(600):
            if time.perf_counter() - t > 30:
                break
            r = client.get("/v1/models", {"Authorization": f"Bearer tpd_{hex_digits(12)}_{hex_digits(64)}"})
            counts[r.shown()] = counts.get(r.shown(), 0) + 1
        seconds = time.perf_counter() - t
        client.close()
        # GCRA lets the burst through, then one request per 1/50 s; at least one 429 is
        # asked for even when the requests were too slow to reach the rate.
        want = max(1, int(600 - (50 + 50 * seconds)) - 5)
        got = counts.get("429", 0)
        run.row("600 requests with random fake token keys (--rate-limit-per-s 50 --rate-limit-burst 50)",
                f"≥ {want} answered 429 (600 − burst − rate × time − 5)",
                ", ".join(f"{v}× {k}" for k, v in sorted(counts.items())), seconds, srv, got >= want, shared=True)
    finally:
        srv.stop()


def loopback_source():
    """127.0.0.2 as a second client address when this machine lets us bind it."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
        return ("127.0.0.2", 0)
    except OSError:
        return None


def probe_victim_prefix(run):
    srv = run.server("victim-prefix", RATE_FLAGS, rate_limit_off=False)
    try:
        victim = run.tokens["victim"]
        key = victim.split("_")[1]
        source = loopback_source()
        flood = Client(srv.port, source=source)
        counts = {}
        t = time.perf_counter()
        for _ in range(600):
            if time.perf_counter() - t > 30:
                break
            r = flood.get("/v1/models", {"Authorization": f"Bearer tpd_{key}_{hex_digits(64)}"})
            counts[r.shown()] = counts.get(r.shown(), 0) + 1
        flood.close()
        own = Client(srv.port)
        mine = {}
        for _ in range(20):
            r = own.get("/v1/models", {"Authorization": f"Bearer {victim}"})
            mine[r.shown()] = mine.get(r.shown(), 0) + 1
        own.close()
        seconds = time.perf_counter() - t
        where = source[0] if source else "127.0.0.1 (127.0.0.2 not bindable)"
        run.row(f"flood of 600 with the victim's key prefix from {where}, then the victim's 20",
                "0 of the victim's 20 answered 429",
                f"flood {', '.join(f'{v}× {k}' for k, v in sorted(counts.items()))}; victim {', '.join(f'{v}× {k}' for k, v in sorted(mine.items()))}",
                seconds, srv, mine.get("429", 0) == 0 and mine.get("200", 0) == 20)
    finally:
        srv.stop()


def probe_small_refusals(run):
    """Host, cancel, CSV, bodies, query, names, params: one loopback server, auth off."""
    srv = run.server("refusals")
    try:
        a = srv.req("GET", "/v1/models", headers={"Host": "attacker.example"})
        c = srv.req("GET", "/v1/models", headers={"Host": f"localhost:{srv.port}"})
        run.row("`Host: attacker.example` on a loopback server (DNS rebinding)", "421 (and 200 for Host: localhost:PORT)",
                f"{a.shown()}; localhost {c.shown()}", a.seconds, srv, a.status == 421 and c.status == 200, shared=True)

        job = srv.req("POST", "/v1/jobs", {"corpus_id": run.corpus, "model": "lda", "seed": 2,
                                           "params": {"topics": 5, "iterations": 100000, "threads": 1, "checkpoint_every_s": 0}}).json()
        jid = job.get("id", "missing")
        cancel = f"/v1/jobs/{jid}/cancel"
        plain = srv.req("POST", cancel, b"{}", {"Content-Type": "text/plain"})
        form = srv.req("POST", cancel, b"x=1", {"Content-Type": "application/x-www-form-urlencoded"})
        origin = srv.req("POST", cancel, {}, {"Origin": "https://attacker.example"})
        after = srv.req("GET", f"/v1/jobs/{jid}").json().get("status")
        own = srv.req("POST", cancel, {})
        ok = plain.status == 415 and form.status == 415 and after in ("queued", "running")
        run.row("POST /v1/jobs/{id}/cancel as text/plain and as a form (cross-site form)", "415 both, the job still runs",
                f"text/plain {plain.shown()}, form {form.shown()}; job then {after}", plain.seconds, srv, ok, shared=True)
        run.row("POST /v1/jobs/{id}/cancel as JSON with `Origin: https://attacker.example`", "403 (the same request without Origin: 202)",
                f"{origin.shown()}; without Origin {own.shown()}", origin.seconds, srv, origin.status == 403 and own.status == 202, shared=True)

        r = srv.req("PATCH", f"/v1/models/{run.model}/topics/0", {"name": '=HYPERLINK("x")'})
        page = srv.req("GET", f"/v1/models/{run.model}/topics?format=csv&n=5")
        cells = [row for row in csv.reader(io.StringIO(page.body.decode(errors="replace")))]
        header = cells[0] if cells else []
        names = [row[header.index("name")] for row in cells[1:] if "name" in header and len(row) == len(header) and row[0] == "0"]
        formulas = [cell for row in cells[1:] for cell in row if cell[:1] in ("=", "+", "@", "\t", "\r")]
        ok = r.status == 200 and page.status == 200 and names and all(n.startswith("'=") for n in names) and not formulas
        run.row("topic renamed `=HYPERLINK(\"x\")`, then GET topics?format=csv", "its name cells start with `'=`; no cell starts with = + @",
                f"rename {r.shown()}, CSV {page.shown()}, name cell {names[0] if names else '(none)'!r}, {len(formulas)} formula cells",
                page.seconds, srv, ok, shared=True)

        a = srv.req("POST", "/v1/corpora", b'[{"text": "git commit"}]', {"Content-Type": "application/json"})
        run.row("JSON array as a corpus body", "422", f"{a.shown()}{problem(a)}", a.seconds, srv, a.status == 422, shared=True)

        a = srv.req("POST", "/v1/corpora?name=a&name=b", json.dumps({"text": THEMES[0]}).encode() + b"\n", {"Content-Type": "application/x-ndjson"})
        run.row("`?name=a&name=b` on an NDJSON upload", "422", f"{a.shown()}{problem(a)}", a.seconds, srv, a.status == 422, shared=True)

        a = srv.req("POST", "/v1/corpora", {"name": "n" * 100_000, "documents": [{"text": THEMES[0]}]})
        run.row("corpus named with 100 KB", "422 naming name", f"{a.shown()}{problem(a)}", a.seconds, srv,
                a.status == 422 and "name" in str(a.json().get("field", "")), shared=True)

        a = srv.req("POST", "/v1/jobs", {"corpus_id": run.corpus, "model": "lda", "params": {"topics": 5, "iterations": 20, "beta": 1e308}, "seed": 1})
        run.row("lda `beta: 1e308`", "422 naming params.beta", f"{a.shown()}{problem(a)}", a.seconds, srv,
                a.status == 422 and "beta" in str(a.json().get("field", "")), shared=True)
    finally:
        srv.stop()


def probe_header_drip(run):
    srv = run.server("header-drip", ["--header-read-timeout-s", "2"])
    try:
        text = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nX-Drip: ".encode() + b"a" * 64
        t = time.perf_counter()
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        sel = selectors.DefaultSelector()
        sel.register(s, selectors.EVENT_READ)
        how, sent = "still open after 12 s", 0
        try:
            for byte in text:
                if time.perf_counter() - t > 12:
                    break
                try:
                    s.send(bytes([byte]))
                    sent += 1
                except OSError as e:
                    how = f"send failed ({type(e).__name__})"
                    break
                if sel.select(1.0):
                    try:
                        got = s.recv(4096)
                    except OSError as e:
                        got, how = b"", f"reset ({type(e).__name__})"
                    if not got:
                        how = how if how.startswith("reset") else "closed"
                    else:
                        how = f"answered {(parse_raw(got + END_OF_HEAD) or ('?',))[0]}"
                    break
        finally:
            sel.close()
            s.close()
        seconds = time.perf_counter() - t
        ok = not how.startswith("still") and seconds <= 4.0
        run.row("request head sent a byte a second (--header-read-timeout-s 2)", "closed within 4 s",
                f"{how} after {sent} bytes", seconds, srv, ok)
    finally:
        srv.stop()


def probe_idle_sockets(run, count=2000):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 200
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        except (ValueError, OSError):
            pass
        count = min(count, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 200)
    srv = run.server("idle-sockets", ["--max-connections", "100"])
    socks = []
    try:
        base = srv.fds()
        sel = selectors.DefaultSelector()
        t = time.perf_counter()
        for _ in range(count):
            s = socket.socket()
            s.setblocking(False)
            socks.append(s)
            if s.connect_ex(("127.0.0.1", srv.port)) in (0, errno.EINPROGRESS):
                sel.register(s, selectors.EVENT_WRITE)
        connected = 0
        while sel.get_map() and time.perf_counter() - t < 5:
            for key, _ in sel.select(0.2):
                if key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    connected += 1
                sel.unregister(key.fileobj)
        sel.close()
        time.sleep(1.0)
        held = (srv.fds() or 0) - (base or 0)
        during = srv.req("GET", "/healthz", timeout=2)
        for s in socks:
            s.close()
        socks = []
        after = srv.req("GET", "/healthz", timeout=15)
        # The new connection's SYN may find the listen backlog still full of the closed
        # sockets and be sent again after 1 s (the kernel's first retransmission): 2 s.
        ok = held <= 100 + 16 and after.status == 200 and after.seconds <= 2.0
        run.row(f"{count} idle sockets against --max-connections 100, then /healthz on a new connection",
                "server holds ≤ 100 of them (fds +≤ 116); /healthz 200 within 2 s once they close (time is that request's)",
                f"{connected} connected, server fds +{held}; /healthz while held {during.shown()} in {during.seconds:.2f} s, after {after.shown()}",
                after.seconds, srv, ok)
    finally:
        for s in socks:
            s.close()
        srv.stop()


def start_token_list(binary):
    """`topicd token list` against a PostgreSQL URL with a password, run beside the other
    probes (connecting may take its time to fail): a thread and the dict it fills."""
    done = {}

    def run():
        t = time.perf_counter()
        cmd = [binary, "token", "list", "--db", "postgres://u:secret@127.0.0.1:1/db"]
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            done.update(out=out.stdout, note=f"exit {out.returncode}", failed=out.returncode != 0)
        except subprocess.TimeoutExpired as e:
            done.update(out=e.stdout or b"", note="still running after 60 s, killed", failed=True)
        done["seconds"] = time.perf_counter() - t

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def finish_token_list(run, started):
    thread, done = started
    thread.join(65)
    text = (done.get("out") or b"").decode(errors="replace")
    leaked = "secret" in text
    first = text.strip().splitlines()[0][:120] if text.strip() else "(no output)"
    run.row("`topicd token list --db 'postgres://u:secret@127.0.0.1:1/db'`", "fails without printing `secret`",
            f"{done.get('note', 'did not end')}, `secret` {'PRINTED' if leaked else 'not printed'}: {first}",
            done.get("seconds"), None, not leaked and done.get("failed", False))


PROBES = [probe_counts_4e9, probe_5m_beside_normal, probe_sweeps_cap_beside_normal, probe_20_bodies,
          probe_metrics_methods, probe_ndjson_4mb, probe_ndjson_cap_and_idle, probe_cache_and_fake_keys,
          probe_victim_prefix, probe_small_refusals, probe_header_drip, probe_idle_sockets]


def table(rows):
    out = ["| probe | expected | seen | time | server peak MB | met |", "|---|---|---|---:|---:|---|"]
    for r in rows:
        cells = [r["probe"], r["expected"], r["seen"], r["time"], r["peak"], "yes" if r["ok"] else "**no**"]
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "topicd"))
    ap.add_argument("--memory-guard-mb", type=int, default=2048, help="kill a probe's server above this resident memory")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (databases, server logs)")
    names = [p.__name__.removeprefix("probe_") for p in PROBES] + ["token_list"]
    ap.add_argument("--only", help=f"comma-separated probes to run, of: {', '.join(names)}")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else set(names)
    if only - set(names):
        sys.exit(f"unknown probe(s) {', '.join(sorted(only - set(names)))}; known: {', '.join(names)}")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary} is not an executable: cargo build --release --locked, or give --binary")
    args.binary = os.path.abspath(args.binary)
    tmp = tempfile.mkdtemp(prefix="topicd-attack-")
    t0 = time.time()
    try:
        try:
            db, tokens, corpus, model, _job = setup(args.binary, tmp)
        except StartError as e:
            print(f"setup failed: {e}", file=sys.stderr)
            return 2
        print(f"setup: corpus {corpus}, LDA model {model}, 4 tokens, {time.time() - t0:.1f} s; logs in {tmp}", flush=True)
        run = Run(args, tmp, db, tokens, corpus, model)
        token_list = start_token_list(args.binary) if "token_list" in only else None
        for probe in (p for p in PROBES if p.__name__.removeprefix("probe_") in only):
            try:
                probe(run)
            except StartError as e:
                run.row(probe.__name__.removeprefix("probe_"), "the server starts", f"did not start: {e}", None, None, False)
            except Exception as e:  # one probe's crash must not hide the others
                run.row(probe.__name__.removeprefix("probe_"), "runs", f"probe crashed: {type(e).__name__}: {e}", None, None, False)
        if token_list:
            finish_token_list(run, token_list)
        missed = [r for r in run.rows if not r["ok"]]
        print(f"\n{table(run.rows)}\n")
        print(f"{len(run.rows) - len(missed)} of {len(run.rows)} probes met their expectation in {time.time() - t0:.0f} s "
              f"({os.path.basename(args.binary)}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f})")
        return 1 if missed else 0
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
