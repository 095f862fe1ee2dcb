#!/usr/bin/env python3
"""Time the console explorer's render in headless Chromium (issue 15: the explorer of the
133-label AppStream HPC model renders in under a second).

Fits HPC on ../shared/data/appstream.jsonl (40 scans, seed 1) through the service,
restarts the server (nothing cached), then drives Debian's Chromium through chromedriver's
WebDriver HTTP API (no Python packages needed): opens the explorer's URL and measures,
inside the page, the milliseconds from navigation start until the topic table, the
topic's scatter and the intertopic map are all drawn. Three loads: the first against
a cold server, then two warm. Prints one JSON line per load.

Usage: python3 bench/explorer_render.py target/release/topicd
(needs `apt-get install chromium chromium-driver`)
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request

from topicd_service import APPSTREAM, Service, wait_up


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(method, url, body=None):
    """A WebDriver command."""
    data = None if body is None else json.dumps(body).encode()
    r = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        r.add_header("content-type", "application/json")
    with urllib.request.urlopen(r, timeout=600) as f:
        return json.loads(f.read() or b"null")


# Inside the page: resolve with performance.now() once the table, the scatter and the
# map are all on the page (polled every 10 ms).
DRAWN = """
const done = arguments[arguments.length - 1];
const ready = () => document.querySelector('[data-testid=topic-table] tbody tr')
  && document.querySelector('[data-testid=topic-detail] svg circle')
  && [...document.querySelectorAll('figure.chart')].find((f) => f.querySelector('figcaption')?.textContent === 'Intertopic map')?.querySelector('circle');
const poll = () => ready() ? done(performance.now()) : (performance.now() > 30000 ? done(-1) : setTimeout(poll, 10));
poll();
"""


def main():
    binary = os.path.abspath(sys.argv[1])
    driver_bin = shutil.which("chromedriver")
    if not driver_bin:
        raise SystemExit("chromedriver not found: apt-get install -y chromium chromium-driver")
    port, dport = free_port(), free_port()
    db = os.path.join(tempfile.mkdtemp(), "db.sqlite")
    service = Service(binary, db, port)
    try:
        corpus = service.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first")
        model = service.fit(corpus["id"], "hpc", {"iterations": 40})["model_id"]
    finally:
        service.stop()
    service = Service(binary, db, port)
    base = service.base
    driver = subprocess.Popen([driver_bin, f"--port={dport}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wd = f"http://127.0.0.1:{dport}"
    try:
        wait_up(f"{wd}/status")
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800"]}}}}
        session = call("POST", f"{wd}/session", caps)["value"]["sessionId"]
        s = f"{wd}/session/{session}"
        call("POST", f"{s}/timeouts", {"script": 60000})
        # Load the console once (its assets cached by the browser as a returning user's
        # would be), on another page so the model is still cold on the server.
        call("POST", f"{s}/url", {"url": f"{base}/#/jobs"})
        for run in ("cold server", "warm", "warm"):
            call("POST", f"{s}/url", {"url": "about:blank"})
            call("POST", f"{s}/url", {"url": f"{base}/#/models/{model}"})
            ms = call("POST", f"{s}/execute/async", {"script": DRAWN, "args": []})["value"]
            print(json.dumps({"load": run, "labels": corpus.get("num_labels"), "ms_to_table_scatter_and_map": round(ms)}), flush=True)
        call("DELETE", s)
    finally:
        driver.terminate()
        driver.wait()
        service.stop()


if __name__ == "__main__":
    main()
