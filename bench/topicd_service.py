"""What the bench scripts share: start `topicd serve` on a database file, call its HTTP
API, upload a JSONL file (extra keys moved into `meta`, bench/strict_docs.py), fit and
wait for the job. Standard library only."""
import datetime
import json
import os
import subprocess
import time
import urllib.request

from strict_docs import strict_ndjson

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPSTREAM = os.path.join(ROOT, "..", "shared", "data", "appstream.jsonl")


class Service:
    """`topicd serve` on 127.0.0.1:`port` and database `db`, started on creation."""

    def __init__(self, binary, db, port):
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", db], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_up(self.base + "/healthz")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def req(self, method, path, body=None, ct="application/json"):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            r.add_header("content-type", ct)
        with urllib.request.urlopen(r, timeout=600) as f:
            return json.loads(f.read() or b"null")

    def upload(self, path, query):
        """Upload a JSONL file as NDJSON, its documents' unknown keys moved into `meta`."""
        return self.req("POST", f"/v1/corpora?{query}", strict_ndjson(path), "application/x-ndjson")

    def wait(self, job):
        """Poll a job until it ends; asserts it succeeded and returns it."""
        while job["status"] not in ("succeeded", "failed", "cancelled"):
            time.sleep(0.3)
            job = self.req("GET", f"/v1/jobs/{job['id']}")
        assert job["status"] == "succeeded", job
        return job

    def fit(self, corpus_id, model, params, seed=1):
        """Submit a fit and wait for it to end; returns the finished job."""
        job = self.req("POST", "/v1/jobs", {"corpus_id": corpus_id, "model": model, "params": params, "seed": seed})
        while job["status"] not in ("succeeded", "failed", "cancelled"):
            time.sleep(0.5)
            job = self.req("GET", f"/v1/jobs/{job['id']}")
        return job


def job_seconds(job):
    """A finished job's started_at to finished_at, in seconds."""
    at = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (at(job["finished_at"]) - at(job["started_at"])).total_seconds()


def appstream_summaries():
    """AppStream summaries (the second line of each text: a sentence or so), as
    {"id", "text"} documents in file order."""
    out = []
    for line in open(APPSTREAM, encoding="utf-8"):
        d = json.loads(line)
        parts = d["text"].split("\n")
        if len(parts) > 1 and parts[1].strip():
            out.append({"id": d["id"], "text": parts[1].strip()})
    return out


def wait_up(url):
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except Exception:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not answer")
