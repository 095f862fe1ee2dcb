#!/usr/bin/env python3
"""bnpy 0.1.7's HDPTopicModel (memoized VI) on the split bench/gensim_hdp.py writes,
for bench/hdp_vs_gensim.sh. Run it with the bnpy virtual environment's python
(../shared/anchors/bnpy_setup.sh builds one).

  completion --input JSONL [--laps N] [--seed S] [--K K] [--alpha A] [--gamma G]
             [--lam L] [--moves merge,delete,shuffle|none] [--batches B]
             [--predict-iterations I] [--predict-tolerance T]

Trains on the "train" documents with bnpy's `memoVB` algorithm (initname
randexamples, bnpy's other defaults) and scores the "test" documents by document
completion exactly as topicd does (src/models/completion.rs): token j of word w in
document id is held out when fmix64(fnv1a64(f"{id}\\x1f{w}\\x1f{j}")) is odd. The
observed half fixes θ by bnpy's own local step (HModel.calc_local_params: documents
initialised from α E[β], `--predict-iterations` coordinate-ascent sweeps, tolerance
`--predict-tolerance` on the document-topic counts); θ̂ = E[π_d] renormalised over the
active topics, E[φ_kw] = λ_kw / Σ_w λ_kw, and each held-out token scores
log Σ_k θ̂_k E[φ_kw]: the same point estimates topicd's completion uses.

Prints one JSON line.
"""
import argparse
import contextlib
import glob
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gensim_hdp import is_heldout, read_docs  # noqa: E402  (the same split code)


def bag_of_words(docs, vocab):
    import numpy as np
    from bnpy.data import BagOfWordsData

    word_id, word_count, doc_range = [], [], [0]
    for counts in docs:
        for w, n in sorted(counts.items(), key=lambda x: vocab[x[0]]):
            word_id.append(vocab[w])
            word_count.append(n)
        doc_range.append(len(word_id))
    return BagOfWordsData(word_id=np.asarray(word_id, dtype=np.int32), word_count=np.asarray(word_count, dtype=np.float64),
                          doc_range=np.asarray(doc_range, dtype=np.int32), vocab_size=len(vocab))


def cmd_completion(a):
    import numpy as np
    import bnpy

    docs = read_docs(a.input)
    train = [c for _, c, s in docs if s != "test"]
    test = [(i, c) for i, c, s in docs if s == "test"]
    words = sorted({w for c in train for w in c})
    vocab = {w: i for i, w in enumerate(words)}
    data = bag_of_words(train, vocab)
    moves = "" if a.moves == "none" else a.moves
    outdir = tempfile.mkdtemp(prefix="bnpy_hdp_")
    os.environ["BNPYOUTDIR"] = outdir
    kwargs = dict(K=a.K, nLap=a.laps, nBatch=a.batches, alpha=a.alpha, gamma=a.gamma, lam=a.lam,
                  initname="randexamples", taskID=a.seed, seed=a.seed, output_path=outdir,
                  doSaveToDisk=True, doWriteStdOut=False, printEvery=0, convergeThr=a.converge)
    if moves:
        kwargs["moves"] = moves
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        model, info = bnpy.run(data, "HDPTopicModel", "Mult", "memoVB", **kwargs)
    seconds = time.perf_counter() - t0
    # bnpy's move transcripts: "MERGE @ lap 21.00 : 4/60 accepted.", "DELETE @ lap 2.00: 1/1
    # accepted.", "BIRTH @ lap 1.00 : Added 0 states. 0/5 succeeded."
    accepted = {}
    for path in glob.glob(os.path.join(outdir, "**", "*-transcript-summary.txt"), recursive=True):
        text = open(path, encoding="utf-8").read()
        for move, ok in re.findall(r"^(MERGE|DELETE) @ lap [0-9.]+ ?: (\d+)/\d+ accepted", text, re.M):
            accepted[move.lower()] = accepted.get(move.lower(), 0) + int(ok)
        for ok in re.findall(r"^BIRTH @ lap [0-9.]+ ?: Added (\d+) states", text, re.M):
            accepted["birth"] = accepted.get("birth", 0) + int(ok)
    shutil.rmtree(outdir, ignore_errors=True)

    observed, held = [], []
    for doc_id, counts in test:
        obs, hold = {}, {}
        for w, n in counts.items():
            h = sum(1 for j in range(n) if is_heldout(doc_id, w, j))
            if n > h:
                obs[w] = n - h
            if h:
                hold[w] = h
        obs = {w: n for w, n in obs.items() if w in vocab}
        hold = {w: n for w, n in hold.items() if w in vocab}
        if obs and hold:
            observed.append(obs)
            held.append(hold)
    test_data = bag_of_words(observed, vocab)
    lp = model.calc_local_params(test_data, nCoordAscentItersLP=a.predict_iterations, convThrLP=a.predict_tolerance,
                                 initDocTopicCountLP=a.predict_init)
    theta = lp["theta"] / lp["theta"].sum(axis=1, keepdims=True)
    lam = model.obsModel.Post.lam
    phi = lam / lam.sum(axis=1, keepdims=True)
    total, held_tokens, obs_tokens = 0.0, 0, 0
    for d, hold in enumerate(held):
        for w, n in hold.items():
            total += n * math.log(float(np.dot(theta[d], phi[:, vocab[w]])))
            held_tokens += n
        obs_tokens += sum(observed[d].values())
    per_token = total / held_tokens
    trace = [float(x) for x in info.get("loss_history", [])]
    print(json.dumps({
        "system": "bnpy", "version": getattr(bnpy, "__version__", "0.1.7"), "seed": a.seed, "laps": float(info.get("lapTrain", a.laps)),
        "K_init": a.K, "topics": int(model.obsModel.K), "alpha": a.alpha, "gamma": a.gamma, "lam": a.lam, "moves": moves or "none",
        "accepted": accepted,
        "train_documents": len(train), "terms": len(vocab), "test_documents": len(held),
        "observed_tokens": obs_tokens, "heldout_tokens": held_tokens,
        "per_token": per_token, "perplexity": math.exp(-per_token), "fit_seconds": seconds,
        "final_loss": trace[-1] if trace else None,
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("completion")
    c.add_argument("--input", required=True)
    c.add_argument("--laps", type=int, default=50)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--K", type=int, default=50)
    c.add_argument("--alpha", type=float, default=0.5)
    c.add_argument("--gamma", type=float, default=10.0)
    c.add_argument("--lam", type=float, default=0.1)
    c.add_argument("--moves", default="none", help="comma-separated bnpy moves (birth,merge,delete,shuffle) or none")
    c.add_argument("--batches", type=int, default=1)
    c.add_argument("--converge", type=float, default=0.01, help="bnpy's convergeThr (its default)")
    c.add_argument("--predict-iterations", type=int, default=100)
    c.add_argument("--predict-tolerance", type=float, default=0.01)
    c.add_argument("--predict-init", default="setDocProbsToEGlobalProbs",
                   help="bnpy's initDocTopicCountLP at prediction (setDocProbsToEGlobalProbs: its start for a new "
                        "document; setDocTopicCountToAllZeros: zero counts, i.e. exp E[log pi] at the prior alone)")
    a = ap.parse_args()
    {"completion": cmd_completion}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
