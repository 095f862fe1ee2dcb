#!/usr/bin/env python3
"""Screenshots of every console page at 1280×900 and 1920×1080 (issue 57), to compare by
eye with the ones an earlier build took.

Against a fresh `topicd serve` (bench/topicd_service.py) it uploads AppStream
(../shared/data/appstream.jsonl: HPC's labels) and the Debian changelogs of this machine
as a dated corpus with two covariates (bench/dated_corpus.py: `date` and `group`), fits
HPC (AppStream, with a test split), LDA with two chains and DCNT with two chains (the
changelogs, with `covariates: ["date", "group"]`), and HDP (the changelogs), then drives
Debian's Chromium through chromedriver's WebDriver HTTP API (no Python packages needed)
over each page: corpora, a corpus with covariates, the fit form (basic and advanced
folded), jobs, a job with its traces, models, and the explorer of each model scrolled
to its topics, map, effects and prediction. Every shot is a PNG under `--out`
(default `bench/out/screenshots/<size>/`), named by page. Each page is also audited
with axe-core (the copy the browser test vendors): its serious or critical violations
are printed with the page, and the script exits non-zero when there is any.

Usage: python3 bench/console_screenshots.py target/release/topicd [--out DIR] [--iterations N]
(needs `apt-get install chromium chromium-driver`)
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

from dated_corpus import build_corpus
from explorer_render import call, free_port
from topicd_service import APPSTREAM, ROOT, Service, wait_up

SIZES = [(1280, 900), (1920, 1080)]

# axe-core, vendored for the browser test (tests/vendor), run on every page drawn.
AXE = os.path.join(ROOT, "tests", "vendor", "axe-core-4.14.1.min.js")
AUDIT = """
const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ['violations'] })
  .then((r) => done(r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }))))
  .catch((e) => done([{ id: 'axe failed', impact: String(e), nodes: [] }]));
"""

# Inside the page: resolve once nothing says "Loading…" or "Computing…" (polled every
# 50 ms, at most 30 s), so a shot shows the page drawn.
SETTLED = """
const done = arguments[arguments.length - 1];
const busy = () => [...document.querySelectorAll('main p.muted')].some((p) => /Loading|Computing/.test(p.textContent));
const start = performance.now();
const poll = () => (!busy() && document.querySelector('main h1')) || performance.now() - start > 30000 ? done(true) : setTimeout(poll, 50);
setTimeout(poll, 300);
"""


def fits(service, iterations):
    """Upload the two corpora and fit the four models; returns (pages, corpus ids)."""
    appstream = service.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first")
    docs, _ = build_corpus(min_tokens=5, max_docs=3000, max_words=200)
    body = "".join(json.dumps(d) + "\n" for d in docs).encode()
    dated = service.req("POST", "/v1/corpora?name=debian-changelogs&stopwords=english&min_df=5&max_df=0.5", body, "application/x-ndjson")
    covariates = {"covariates": ["date", "group"], "splines": {"date": 5}}
    jobs = {
        "hpc": service.fit(appstream["id"], "hpc", {"iterations": iterations, "test_fraction": 0.2}),
        "lda": service.fit(dated["id"], "lda", {"topics": 12, "iterations": 4 * iterations, "chains": 2, **covariates}),
        "dcnt": service.fit(dated["id"], "dcnt", {"topics": 12, "iterations": 4 * iterations, "chains": 2, **covariates}),
        "hdp": service.fit(dated["id"], "hdp", {"passes": 10}),
    }
    for name, job in jobs.items():
        if job["status"] != "succeeded":
            raise SystemExit(f"{name} fit {job['status']}: {job.get('error')}")
    return jobs, dated["id"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "screenshots"))
    ap.add_argument("--iterations", type=int, default=40)
    args = ap.parse_args()
    driver_bin = shutil.which("chromedriver")
    if not driver_bin:
        raise SystemExit("chromedriver not found: apt-get install -y chromium chromium-driver")
    port, dport = free_port(), free_port()
    db = os.path.join(tempfile.mkdtemp(), "db.sqlite")
    service = Service(os.path.abspath(args.binary), db, port)
    driver = subprocess.Popen([driver_bin, f"--port={dport}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wd = f"http://127.0.0.1:{dport}"
    with open(AXE) as f:
        axe_source = f.read()
    failures = []
    try:
        jobs, dated = fits(service, args.iterations)
        pages = [("corpora", "#/corpora"), ("corpus-covariates", f"#/corpora/{dated}"), ("fit-form", f"#/fit?family=dcnt&corpus={dated}"), ("jobs", "#/jobs"), ("models", "#/models")]
        pages += [(f"job-{name}", f"#/jobs/{job['id']}") for name, job in jobs.items()]
        sections = ["#topics-h", "#h-intertopic-map", "#h-effects", "#h-label-evaluation", "#h-topic-correlations", "#h-predict"]
        wait_up(f"{wd}/status")
        for width, height in SIZES:
            folder = os.path.join(args.out, f"{width}x{height}")
            os.makedirs(folder, exist_ok=True)
            opts = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}"]
            session = call("POST", f"{wd}/session", {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": opts}}}})["value"]["sessionId"]
            s = f"{wd}/session/{session}"
            call("POST", f"{s}/timeouts", {"script": 60000})

            def shot(name, url, anchor=None):
                call("POST", f"{s}/url", {"url": f"{service.base}/{url}"})
                call("POST", f"{s}/execute/async", {"script": SETTLED, "args": []})
                if anchor:
                    found = call("POST", f"{s}/execute/sync", {"script": f"const e = document.querySelector('{anchor}'); if (e) e.scrollIntoView(); return !!e;", "args": []})["value"]
                    if not found:
                        return
                    time.sleep(0.4)
                png = base64.b64decode(call("GET", f"{s}/screenshot")["value"])
                with open(os.path.join(folder, f"{name}.png"), "wb") as f:
                    f.write(png)
                call("POST", f"{s}/execute/sync", {"script": axe_source + "\nreturn true;", "args": []})
                violations = call("POST", f"{s}/execute/async", {"script": AUDIT, "args": []})["value"]
                failures.extend({"page": name, **v} for v in violations)
                print(json.dumps({"size": f"{width}x{height}", "page": name, "axe_serious_or_critical": violations}), flush=True)

            for name, url in pages:
                shot(name, url)
            for name, job in jobs.items():
                for section in sections:
                    shot(f"model-{name}-{section.strip('#').replace('h-', '')}", f"#/models/{job['model_id']}", section)
            call("DELETE", s)
    finally:
        driver.terminate()
        driver.wait()
        service.stop()
    if failures:
        raise SystemExit(f"axe found {len(failures)} serious or critical violations: {json.dumps(failures)}")
    print(json.dumps({"pages": "all", "axe_serious_or_critical": 0}))


if __name__ == "__main__":
    main()
