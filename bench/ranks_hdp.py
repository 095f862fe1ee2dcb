#!/usr/bin/env python3
"""HDP over MPI ranks: memory per rank, bytes sent per pass and rank, time per pass at
R = 1, 2, 4, and single-process speed of the MPI build against the default build, all
in one run (issue 43's measured section).

Usage:  python3 bench/ranks_hdp.py [--copies 500] [--topics 50] [--ranks 1,2,4]
        python3 bench/ranks_hdp.py --copies 20 --passes 1          # a quick look

The corpus is the shared AppStream descriptions (../shared/data/appstream.jsonl: 2 016
distinct documents, about 80 tokens each) repeated COPIES times with fresh ids (500
copies: 1 008 000 documents). Each R runs `mpirun
--oversubscribe --bind-to none -n R topicd fit --model hdp` (release, --features mpi)
twice, with P and 2P passes and no moves (merges and deletes off, so every pass is one
visit of every batch), so the difference of the bytes each rank sent, over P, is a
pass' traffic alone (the scatter of the documents and the final gathers cancel out).
The lower bound printed beside it is what each rank must receive for every batch visit:
the new batch summary's topic-word counts (8 bytes a cell, the batch's distinct words ×
K), the counts every rank holds to take the global step. (Bytes sent count what a rank
hands to MPI: an integer all-reduce of n cells counts 8n, whatever MPI's own algorithm
moves.)

Single-process speed: the default build and the MPI build of `topicd fit --model hdp`
on AppStream × 20 (K = 50, 5 passes, 2 threads), alternated REPEATS times.
Raw lines go to bench/out/raw/ranks_hdp_*.json, the tables to bench/out/ranks_hdp.md.
"""
import argparse
import json
import os
import statistics

from ranks_common import OUT, RAW, ROOT, build, machine_line, run_fit
from ranks_common import repeated_corpus as repeated

APPSTREAM = os.path.join(ROOT, "..", "shared", "data", "appstream.jsonl")


def appstream_docs():
    """AppStream's documents; of the two lines that share an id (and a text) the first,
    as an upload keeps it."""
    seen = set()
    with open(APPSTREAM) as f:
        for line in f:
            d = json.loads(line) if line.strip() else None
            if d and d["id"] not in seen:
                seen.add(d["id"])
                yield d


def repeated_corpus(copies):
    return repeated(appstream_docs(), "appstream", copies, ["text"])


def fit(binary, corpus, ranks, threads, topics, passes, extra=()):
    cmd = [binary, "fit", "--input", corpus, "--model", "hdp", "--topics", str(topics), "--param", f"passes={passes}",
           "--param", "convergence_tolerance=0", "--param", "merge_every=0", "--param", "delete_every=0",
           "--threads", str(threads), "--seed", "1"] + list(extra)
    return run_fit(cmd, ranks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=500)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--passes", type=int, default=1, help="P: the runs take P and 2P passes")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--repeats", type=int, default=3, help="single-process speed: alternations")
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    os.makedirs(RAW, exist_ok=True)
    default_bin, mpi_bin = os.path.join(OUT, "topicd-default"), os.path.join(OUT, "topicd-mpi")
    build(None, default_bin)
    build("mpi", mpi_bin)
    lines = [machine_line(), ""]

    # 1. Single-process speed: default build vs MPI build, same run.
    if not a.skip_speed:
        small = repeated_corpus(20)
        speed = {"default": [], "mpi": []}
        for r in range(a.repeats):
            for name, binary in (("default", default_bin), ("mpi", mpi_bin)):
                line = fit(binary, small, 0, 2, 50, 5)
                speed[name].append(line["seconds_per_iteration"])
                json.dump(line, open(os.path.join(RAW, f"ranks_hdp_speed_{name}_{r}.json"), "w"))
        d, m = statistics.median(speed["default"]), statistics.median(speed["mpi"])
        lines += ["### Single-process speed, AppStream × 20, K = 50, 5 passes, 2 threads", "",
                  "| build | median s/pass | runs | vs default build |", "|---|---|---|---|",
                  f"| default | {d:.3f} | {', '.join(f'{x:.3f}' for x in speed['default'])} | 1.000 |",
                  f"| --features mpi | {m:.3f} | {', '.join(f'{x:.3f}' for x in speed['mpi'])} | {m / d:.3f} |", ""]

    # 2. Ranks on the repeated corpus.
    corpus = repeated_corpus(a.copies)
    rows = []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        threads = 2 if ranks == 1 else 1
        short = fit(mpi_bin, corpus, ranks, threads, a.topics, a.passes)
        long = fit(mpi_bin, corpus, ranks, threads, a.topics, 2 * a.passes)
        json.dump({"short": short, "long": long}, open(os.path.join(RAW, f"ranks_hdp_r{ranks}.json"), "w"))
        per_pass = [(l["bytes_sent"] - s["bytes_sent"]) / a.passes for s, l in zip(short["per_rank"], long["per_rank"])]
        seconds = (long["fit_seconds"] - short["fit_seconds"]) / a.passes
        rows.append((ranks, threads, long, per_pass, seconds))
    first = rows[0][2]
    v, k, docs, nnz = first["terms"], a.topics, first["documents"], first["nonzeros"]
    # One batch (the default): its distinct words are every word the training documents use.
    lower = v * k * 8
    lines += [f"### HDP over ranks: AppStream × {a.copies} ({docs:,} documents, {first['tokens']:,} tokens, {nnz:,} non-zeros, "
              f"V = {v:,}), K = {k}, one batch, no moves", "",
              "| R | threads/rank | s/pass | peak RSS per rank (MB) | document side per rank, computed (MB) | bytes sent per pass and rank (MB) | lower bound (MB) | ratio |",
              "|---|---|---|---|---|---|---|---|"]
    for ranks, threads, long, per_pass, seconds in rows:
        rss = ", ".join(f"{r['peak_rss_bytes'] / 1e6:,.0f}" for r in long["per_rank"])
        # Counts (term and count, 8 bytes a non-zero), their slots in the batch's words (4)
        # and N_dk (8 bytes a topic), per rank.
        doc_side = (nnz * 12 + docs * k * 8) / ranks / 1e6
        sent = max(per_pass) / 1e6 if ranks > 1 else 0.0
        bound = lower / 1e6 if ranks > 1 else 0.0
        ratio = f"{sent / bound:.2f}" if ranks > 1 else ""
        lines.append(f"| {ranks} | {threads} | {seconds:.2f} | {rss} | {doc_side:,.0f} | {sent:.2f} | {bound:.2f} | {ratio} |")
    # The batch summary, the total and q(φ)'s two expectations (8 bytes a cell each), and
    # the visited batch's exact counts and new summary (8 each).
    shared = (4 * v * k * 8 + v * k * 16) / 1e6
    lines += ["", f"Shared side on every rank: the batch summary, the total, E[log φ] and its exponential ({v:,} × {k} × 8 bytes "
              f"each) and, during a visit, the exact counts and the new summary (× 16): {shared:,.0f} MB. "
              "Rank 0 also holds the corpus as read (its text's tokens while reading, then sparse counts)."]
    text = "\n".join(x for x in lines if x is not None)
    print(text)
    open(os.path.join(OUT, "ranks_hdp.md"), "w").write(text + "\n")


if __name__ == "__main__":
    main()
