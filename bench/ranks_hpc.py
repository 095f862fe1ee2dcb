#!/usr/bin/env python3
"""HPC over MPI ranks: memory per rank, bytes sent per scan and rank, time per scan at
R = 1, 2, 4, in one run (issue 43's measured section).

Usage:  python3 bench/ranks_hpc.py [--documents 500000] [--ranks 1,2,4] [--scans 2]
        python3 bench/ranks_hpc.py --documents 30000            # a quick look

The corpus is drawn from HPC's generative process by `topicd simulate-hpc` (600 labels
on a 6, 9, 10 tree, 15 000 words, about 65 tokens a document: the simulated corpus of
the issue's single-process figures), written once to bench/out/. Each R runs `mpirun
--oversubscribe --bind-to none -n R topicd fit --model hpc` (release, --features mpi)
twice, with S and 2S scans of one chain on every document (no validation or test split),
so the difference of the bytes each rank sent, over S, is a scan's traffic alone (the
scatter of the data and the final gathers cancel out). The lower bound printed beside
it is what the other ranks must receive of this rank's words for their affinity blocks:
its β rows (N nodes × 8 bytes a word), to each of the R − 1 others. (Bytes sent count
what a rank hands to MPI: an all-gather of n bytes counts n × (R − 1), whatever MPI's own
algorithm moves.) Rank 0 also shapes and holds the corpus; the table's memory column
gives every rank's peak.

Raw lines go to bench/out/raw/ranks_hpc_*.json, the table to bench/out/ranks_hpc.md.
"""
import argparse
import json
import os

from ranks_common import OUT, RAW, build, machine_line, run_fit, sh


def corpus(binary, documents):
    path = os.path.join(OUT, f"hpc_sim_{documents}.jsonl")
    if not os.path.exists(path):
        sh([binary, "simulate-hpc", "--documents", str(documents), "--out", path + ".tmp", "--seed", "1"])
        os.rename(path + ".tmp", path)
    return path


def fit(binary, path, ranks, threads, scans):
    cmd = [binary, "fit", "--input", path, "--model", "hpc", "--stopwords", "none", "--iterations", str(scans),
           "--param", "burn_in=1", "--param", "validation_fraction=0", "--param", "test_fraction=0",
           "--threads", str(threads), "--seed", "1"]
    return run_fit(cmd, ranks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--documents", type=int, default=500_000)
    ap.add_argument("--scans", type=int, default=2, help="S: the runs take S and 2S scans")
    ap.add_argument("--ranks", default="1,2,4")
    a = ap.parse_args()
    os.makedirs(RAW, exist_ok=True)
    mpi_bin = os.path.join(OUT, "topicd-mpi")
    build("mpi", mpi_bin)
    path = corpus(mpi_bin, a.documents)
    lines = [machine_line(), ""]
    rows = []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        threads = 2 if ranks == 1 else 1
        short = fit(mpi_bin, path, ranks, threads, a.scans)
        long = fit(mpi_bin, path, ranks, threads, 2 * a.scans)
        json.dump({"short": short, "long": long}, open(os.path.join(RAW, f"ranks_hpc_r{ranks}.json"), "w"))
        per_scan = [(l["bytes_sent"] - s["bytes_sent"]) / a.scans for s, l in zip(short["per_rank"], long["per_rank"])]
        # Scan 1 refits every mode and costs several steady scans, by an amount that
        # varies from run to run: the steady scans' mean and the refit scan are
        # reported apart (the long run's), not the difference of the runs' times.
        seconds = (long["seconds_per_steady_scan"], long["seconds_per_refit_scan"])
        rows.append((ranks, threads, long, per_scan, seconds))
    first = rows[0][2]
    v, docs, nnz = first["terms"], first["documents"], first["nonzeros"]
    n = 601  # the 6, 9, 10 tree's 600 labels and the root
    k = n - 1
    lines += [f"### HPC over ranks: {docs:,} simulated documents ({first['tokens']:,} tokens, {nnz:,} non-zeros, V = {v:,}), "
              f"K = {k} labels, one chain; bytes differenced over {a.scans} scans", "",
              "| R | threads/rank | s/steady scan | s/refit scan | peak RSS per rank (MB) | document side per rank, computed (MB) | word side per rank, computed (MB) "
              "| bytes sent per scan and rank (MB) | lower bound (MB) | ratio |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for ranks, threads, long, per_scan, seconds in rows:
        rss = ", ".join(f"{r['peak_rss_bytes'] / 1e6:,.0f}" for r in long["per_rank"])
        # ξ (K × 8 a document), its words (word and count, 12 bytes a non-zero), per rank.
        doc_side = (docs * k * 8 + nnz * 12) / ranks / 1e6
        # μ, τ², β's own rows and the four estimand sums (V × N or V × K × 8 each), the
        # words' document rows (12 bytes a non-zero), per rank.
        word_side = (v * n * 8 * 4 + v * k * 8 * 3 + nnz * 12) / ranks / 1e6
        sent = sum(per_scan) / len(per_scan) / 1e6 if ranks > 1 else 0.0
        bound = v * n * 8 * (ranks - 1) / ranks / 1e6
        ratio = f"{sent / bound:.2f}" if ranks > 1 else ""
        lines.append(f"| {ranks} | {threads} | {seconds[0]:.2f} | {seconds[1]:.1f} | {rss} | {doc_side:,.0f} | {word_side:,.0f} | {sent:.1f} | {bound:.1f} | {ratio} |")
    lines += ["", f"Shared side on every rank: β of every word ({v:,} × {n} × 8 bytes: {v * n * 8 / 1e6:,.0f} MB), and every document's "
              "active labels and θ (a few numbers a document). Bytes sent: the mean over the ranks."]
    text = "\n".join(lines)
    print(text)
    open(os.path.join(OUT, "ranks_hpc.md"), "w").write(text + "\n")


if __name__ == "__main__":
    main()
