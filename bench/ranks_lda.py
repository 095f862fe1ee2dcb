#!/usr/bin/env python3
"""LDA over MPI ranks: memory per rank, bytes sent per iteration and rank, time per
iteration at R = 1, 2, 4, and single-process speed of the MPI build against the
default build and tomotopy, all in one run (issue 43's measured section).

Usage:  python3 bench/ranks_lda.py [--copies 85] [--topics 100] [--ranks 1,2,4]
        python3 bench/ranks_lda.py --copies 4 --iterations 4        # a quick look

The corpus is linuxdoc's bag of words (bench/prepare_linuxdoc.py) repeated COPIES times
with fresh ids (85 copies: 200 M tokens). Each R runs `mpirun --oversubscribe -n R
topicd fit` (release, --features mpi) twice, with I and 2I sweeps, the log joint only at
the first and last sweep and one kept sweep, so the difference of the bytes each rank
sent, over I, is the per-sweep traffic of the ring of word blocks alone (the shard
scatter and the final gathers cancel out). The lower bound printed beside it is the
word-topic counts that must move: each rank hands on every word block once per sweep
(V × K × 4 bytes) plus the topic totals' integer sums (P rounds × K × 8 bytes).

Single-process speed: the default build and the MPI build of `topicd fit` on linuxdoc
(K = 100, 50 sweeps, 2 threads, alternated REPEATS times) and tomotopy 0.14 once, same
run. Raw lines go to bench/out/raw/ranks_*.json, the tables to bench/out/ranks_lda.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from ranks_common import OUT, RAW, ROOT, build, machine_line, run_fit, sh
from ranks_common import repeated_corpus as repeated

BOW = os.path.join(OUT, "linuxdoc_bow.jsonl")


def repeated_corpus(copies):
    with open(BOW) as f:
        return repeated((json.loads(line) for line in f), "linuxdoc", copies, ["counts"])


def fit(binary, corpus, ranks, threads, topics, iterations, seed=1, extra=()):
    cmd = [binary, "fit", "--input", corpus, "--model", "lda", "--topics", str(topics), "--iterations", str(iterations),
           "--burn-in", str(iterations - 1), "--param", f"loglik_every={10 * iterations}", "--stopwords", "none",
           "--threads", str(threads), "--seed", str(seed)] + list(extra)
    return run_fit(cmd, ranks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=85)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=3, help="I: the runs take I and 2I sweeps")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--repeats", type=int, default=3, help="single-process speed: alternations")
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    os.makedirs(RAW, exist_ok=True)
    if not os.path.exists(BOW):
        sh([sys.executable, "bench/prepare_linuxdoc.py"])
    default_bin, mpi_bin = os.path.join(OUT, "topicd-default"), os.path.join(OUT, "topicd-mpi")
    build(None, default_bin)
    build("mpi", mpi_bin)
    lines = [machine_line(), ""]

    # 1. Single-process speed: default build vs MPI build (and tomotopy), same run.
    if not a.skip_speed:
        speed = {"default": [], "mpi": []}
        for r in range(a.repeats):
            for name, binary in (("default", default_bin), ("mpi", mpi_bin)):
                cmd = [binary, "fit", "--input", BOW, "--model", "lda", "--topics", "100", "--alpha", "0.5", "--beta", "0.01",
                       "--iterations", "50", "--threads", "2", "--stopwords", "none", "--seed", str(1 + r)]
                line = json.loads(subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, text=True).stdout)
                speed[name].append(line["tokens_per_second"])
                json.dump(line, open(os.path.join(RAW, f"ranks_speed_{name}_{r}.json"), "w"))
        tomo = json.loads(subprocess.run([sys.executable, "bench/tomotopy_lda.py", "--input", BOW, "--threads", "2", "--topics", "100",
                                          "--alpha", "0.5", "--beta", "0.01", "--iterations", "50", "--seed", "1"],
                                         check=True, cwd=ROOT, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        d, m = statistics.median(speed["default"]), statistics.median(speed["mpi"])
        t = tomo.get("tokens_per_second")
        lines += ["### Single-process speed, linuxdoc, K = 100, 50 sweeps, 2 threads", "",
                  "| build | median tokens/s | runs | vs default build | vs tomotopy |", "|---|---|---|---|---|",
                  f"| default | {d:,.0f} | {', '.join(f'{x:,.0f}' for x in speed['default'])} | 1.000 | {d / t:.2f} |" if t else "",
                  f"| --features mpi | {m:,.0f} | {', '.join(f'{x:,.0f}' for x in speed['mpi'])} | {m / d:.3f} | {m / t:.2f} |" if t else "",
                  f"| tomotopy 0.14 | {t:,.0f} | 1 | | 1.00 |" if t else "", ""]

    # 2. Ranks on the repeated corpus.
    corpus = repeated_corpus(a.copies)
    rows = []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        threads = 2 if ranks == 1 else 1
        short = fit(mpi_bin, corpus, ranks, threads, a.topics, a.iterations)
        long = fit(mpi_bin, corpus, ranks, threads, a.topics, 2 * a.iterations)
        json.dump({"short": short, "long": long}, open(os.path.join(RAW, f"ranks_lda_r{ranks}.json"), "w"))
        per_sweep = [(l["bytes_sent"] - s["bytes_sent"]) / a.iterations for s, l in zip(short["per_rank"], long["per_rank"])]
        seconds = (long["fit_seconds"] - short["fit_seconds"]) / a.iterations
        rows.append((ranks, threads, long, per_sweep, seconds))
    first = rows[0][2]
    v, k, n, docs = first["terms"], a.topics, first["tokens"], first["documents"]
    blocks = max(1, min(16, int((n // 32768) ** 0.5)))
    padded = (k + 7) // 8 * 8
    lower = v * k * 4 + blocks * k * 8
    lines += [f"### LDA over ranks: linuxdoc × {a.copies} ({docs:,} documents, {n:,} tokens, V = {v:,}), K = {k}, "
              f"a {blocks} × {blocks} grid", "",
              "| R | threads/rank | s/sweep | peak RSS per rank (MB) | document side per rank, computed (MB) | bytes sent per sweep and rank (MB) | lower bound (MB) | ratio |",
              "|---|---|---|---|---|---|---|---|"]
    for ranks, threads, long, per_sweep, seconds in rows:
        rss = ", ".join(f"{r['peak_rss_bytes'] / 1e6:,.0f}" for r in long["per_rank"])
        # Tokens, their word index and z (12 bytes each), n_dk rows padded to the kernel's
        # width (4 bytes), θ's sums (8 bytes per topic), per rank.
        doc_side = (n * 12 + docs * (padded * 4 + k * 8)) / ranks / 1e6
        sent = max(per_sweep) / 1e6 if ranks > 1 else 0.0
        bound = lower / 1e6 if ranks > 1 else 0.0
        ratio = f"{sent / bound:.2f}" if ranks > 1 else ""
        lines.append(f"| {ranks} | {threads} | {seconds:.2f} | {rss} | {doc_side:,.0f} | {sent:.2f} | {bound:.2f} | {ratio} |")
    shared = (v * k * 4 + v * k * 8) / 1e6
    lines += ["", f"Shared side on every rank: n_kw ({v:,} × {k} × 4 bytes) and φ's sums (× 8 bytes): {shared:,.1f} MB. "
              "Rank 0 also holds the corpus as read (sparse counts) and gathers θ at the end, so its peak is the largest."]
    text = "\n".join(x for x in lines if x is not None)
    print(text)
    open(os.path.join(OUT, "ranks_lda.md"), "w").write(text + "\n")


if __name__ == "__main__":
    main()
