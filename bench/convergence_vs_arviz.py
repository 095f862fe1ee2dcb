#!/usr/bin/env python3
"""Convergence diagnostics on real data, against ArviZ on the same draws.

Fits LDA on AppStream (K topics, re-estimating α every 10 sweeps so α's sum moves)
with one chain and with CHAINS chains through `topicd serve`, takes the scalar traces
the job's convergence report carries (`convergence.traces`), computes ArviZ's
`rhat(method="rank")`, `ess(method="bulk"|"tail")` and `mcse(method="mean")` on them in
the same run, and prints both side by side with the largest difference, the R̂ verdict,
the chains' topic alignment distances and the wall-clock cost of the extra chains.
HPC, PCM, DCNT and SCNT are fitted too, each with one chain and with OTHER chains, to
show what their reports say on the same corpus, that ArviZ agrees on their traces, and
what the extra chains cost in time and in stored model bytes.

Usage: python3 bench/convergence_vs_arviz.py [--bin target/release/topicd]
       [--arviz-python PY] [--topics 20] [--iterations 400] [--chains 4] [--seed 1]
       [--other-chains 2]
PY is a Python with ArviZ 0.23 (default: a virtual environment made under bench/out/
with `pip install arviz==0.23.4`). The table goes to bench/out/convergence_vs_arviz.md.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import APPSTREAM, ROOT, Service  # noqa: E402

ARVIZ = r"""
import json, sys
import numpy as np
import arviz as az
out = {}
for t in json.load(sys.stdin):
    x = np.array(t["chains"], dtype=float)
    out[t["name"]] = {
        "rhat": float(az.rhat(x, method="rank")),
        "ess_bulk": float(az.ess(x, method="bulk")),
        "ess_tail": float(az.ess(x, method="tail")),
        "mcse_mean": float(az.mcse(x, method="mean")),
    }
json.dump({"version": az.__version__, "diagnostics": out}, sys.stdout)
"""


def arviz_python(path):
    if path:
        return path
    venv = os.path.join(ROOT, "bench", "out", "arviz-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "--quiet", "arviz==0.23.4"])
    return py


def arviz_on(py, traces):
    r = subprocess.run([py, "-c", ARVIZ], input=json.dumps(traces), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def fmt(x, digits=4):
    return "–" if x is None else f"{x:.{digits}f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "topicd"))
    ap.add_argument("--arviz-python")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=400)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--optimize-interval", type=int, default=10, help="LDA's optimize_interval (0: α fixed)")
    ap.add_argument("--lda-only", action="store_true", help="skip the HPC, PCM, DCNT and SCNT fits")
    ap.add_argument("--other-chains", type=int, default=2, help="chains of the HPC, PCM, DCNT and SCNT fits beside one")
    args = ap.parse_args()
    py = arviz_python(args.arviz_python)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "topicd.db")
        svc = Service(args.bin, db, 18000 + os.getpid() % 1000)
        try:
            corpus = svc.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first&stopwords=english&min_df=2")
            n = args.iterations
            params = {"topics": args.topics, "iterations": n, "burn_in": n // 2, "thin": 2, "optimize_interval": args.optimize_interval}
            runs = {}
            for chains in (1, args.chains):
                started = time.time()
                job = svc.fit(corpus["id"], "lda", dict(params, chains=chains), seed=args.seed)
                assert job["status"] == "succeeded", job
                runs[chains] = (job, time.time() - started)
            job, seconds = runs[args.chains]
            report = job["convergence"]
            az = arviz_on(py, report["traces"])
            lines.append(f"LDA on AppStream ({corpus['num_documents']} documents, {corpus['num_tokens']} tokens), K = {args.topics}, "
                         f"{n} sweeps per chain (burn-in {n // 2}, thin 2: {report['draws_per_chain']} draws per chain), "
                         f"{'α re-estimated every ' + str(args.optimize_interval) if args.optimize_interval else 'α fixed'}; seed {args.seed}; ArviZ {az['version']}.")
            lines.append("")
            lines.append("| quantity | chains | topicd R̂ | ArviZ R̂ | topicd bulk ESS | ArviZ bulk ESS | topicd tail ESS | ArviZ tail ESS | largest relative difference |")
            lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            worst = 0.0
            for q in report["quantities"]:
                a = az["diagnostics"][q["name"]]
                p = q["pooled"]
                diffs = [abs(p[k] - a[k]) / max(abs(a[k]), 1e-300) for k in ("rhat", "ess_bulk", "ess_tail", "mcse_mean") if p[k] is not None]
                worst = max([worst] + diffs)
                lines.append(f"| {q['name']} | {report['chains']} | {fmt(p['rhat'])} | {fmt(a['rhat'])} | {fmt(p['ess_bulk'], 1)} | {fmt(a['ess_bulk'], 1)} | "
                             f"{fmt(p['ess_tail'], 1)} | {fmt(a['ess_tail'], 1)} | {max(diffs):.1e} |")
            shares = report["sorted_topic_shares"]
            lines.append("")
            lines.append(f"Largest relative difference from ArviZ over every diagnostic: **{worst:.1e}**. "
                         f"Verdict: max R̂ {fmt(report['max_rhat'])} → converged = {report['converged']}; sorted topic shares: worst R̂ {fmt(shares['max_rhat'])}, "
                         f"least bulk ESS {fmt(shares['min_ess_bulk'], 1)}.")
            model = svc.req("GET", f"/v1/models/{job['model_id']}")
            dist = [max(a["distances"]) for a in model["diagnostics"]["chain_alignment"]]
            mean_dist = [sum(a["distances"]) / len(a["distances"]) for a in model["diagnostics"]["chain_alignment"]]
            lines.append(f"Chains 1–{args.chains - 1} matched to chain 0: mean L1 distance per topic {', '.join(f'{d:.3f}' for d in mean_dist)}; "
                         f"largest {', '.join(f'{d:.3f}' for d in dist)} (0: the same word distribution, 2: disjoint).")
            one_job, one_s = runs[1]
            lines.append(f"Wall clock: 1 chain {one_s:.1f} s, {args.chains} chains {seconds:.1f} s (**{seconds / one_s:.2f}×**); "
                         f"one chain's own R̂ (halves) on loglik_per_token: {fmt(one_job['convergence']['quantities'][0]['rhat'])}.")
            if args.lda_only:
                return finish(lines)
            lines.append("")
            lines.append("| family | scans per chain | chains | max R̂ | worst quantity | least bulk ESS | largest difference from ArviZ | mean L1, matched topics | wall s | model bytes |")
            lines.append("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
            families = (("hpc", {"iterations": 100}), ("pcm", {"topics": 10, "iterations": 100}),
                        ("dcnt", {"topics": 20, "iterations": 200}), ("scnt", {"topics": 20, "iterations": 200}))
            for family, p in families:
                for chains in (1, args.other_chains):
                    started = time.time()
                    j = svc.fit(corpus["id"], family, dict(p, chains=chains), seed=args.seed)
                    wall = time.time() - started
                    assert j["status"] == "succeeded", j
                    r = j["convergence"]
                    qs = r["quantities"] + (r["sorted_topic_shares"]["quantities"] or [])
                    worst_q = max((q for q in qs if q["rhat"] is not None), key=lambda q: q["rhat"], default=None)
                    diff = "–"
                    if chains > 1:
                        a = arviz_on(py, r["traces"])["diagnostics"]
                        by_name = {q["name"]: q for q in r["quantities"]}
                        diff = f"{max(abs(by_name[n]['pooled'][k] - v[k]) / max(abs(v[k]), 1e-300) for n, v in a.items() for k in ('rhat', 'ess_bulk') if by_name[n]['pooled'][k] is not None):.1e}"
                    m = svc.req("GET", f"/v1/models/{j['model_id']}")
                    al = m["diagnostics"].get("chain_alignment") or []
                    l1 = ", ".join(f"{sum(x['distances']) / len(x['distances']):.3f}" for x in al) or ("– (labels)" if family == "hpc" and chains > 1 else "–")
                    lines.append(f"| {family} | {p['iterations']} | {chains} | {fmt(r['max_rhat'])} | {worst_q['name'] if worst_q else '–'} | "
                                 f"{fmt(r['min_ess_bulk'], 1)} | {diff} | {l1} | {wall:.1f} | {model_bytes(db, j['model_id']):,} |")
        finally:
            svc.stop()
    finish(lines)


def model_bytes(db, model_id):
    """The stored model blob's size, read from the service's SQLite file."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT length(data) FROM models WHERE id = ?", (model_id,)).fetchone()[0]


def finish(lines):
    """Print the table and write it to bench/out/convergence_vs_arviz.md."""
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "convergence_vs_arviz.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
