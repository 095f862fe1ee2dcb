#!/usr/bin/env python3
"""Seeded topics against the truth: topicd seeded, topicd unseeded and tomotopy's
`set_word_prior`, on corpora drawn from LDA with planted topics (bench/README.md).

Each replicate draws K = 10 topics over V = 500 words (phi_k ~ Dirichlet(0.05)), then
makes one of each seeded topic's top 5 words heavy in the next topic too (a shared
seed word), and D = 600 documents of 60 tokens (theta_d ~ Dirichlet(0.2)). Three
topics are seeded with their 4 truest words (the shared one among them). Every side
fits K = 10 with alpha = 0.1 and beta = 0.01 (tomotopy's defaults) for 300 sweeps,
seed = the replicate:

- topicd seeded: `seed_words` (`seed_strength` 0.3, the default); seeded topic s is topic s.
- topicd unseeded: no seeds.
- tomotopy (LDAModel, one worker) with `set_word_prior(word, [1.0 if k == s else
  0.1 for k in range(K)])` for each seed word (the usage in tomotopy's own docs), and
  again with the prior matched to topicd's (eta + n_w for the seeded topic, eta
  elsewhere: the same asymmetric prior), `--no-matched` to skip.

Measures, per replicate: for each seeded truth topic, the L1 distance between its
distribution and the fitted topic's, and the share of its top 10 words among the
fitted topic's top 10. The fitted topic is the seeded one itself (topic s) for seeded
fits (the point of seeding: the topic under that name is that topic), and the best
match by the minimum-cost assignment over all topics for unseeded fits (favourable to
them). The other (unseeded) topics: mean matched L1 to the truth's other topics. Every
topic's L1: the mean over all K truth topics of those two (a fit that lost a planted
topic counts it in one column or the other: in the seeded column when a seeded topic
went, in the other column when an unseeded one did), and the fits that lost a planted
topic (one of the K further than L1 = 1 from its fitted topic: merged with another
while another split).
Prints a table of means and standard errors over the replicates.

With `--model pcm` topicd's sides fit PCM (`iterations` 300, its other defaults; its
seeds raise the seed words' rates, docs/models.md) and are scored on its topics'
frequencies E[beta] normalised over the vocabulary; the tomotopy rows stay LDA, the
anchor a user would compare with.

Usage: python3 bench/seeded_topics.py target/release/topicd [--replicates 10] [--fit-seeds 1] [--model pcm]
"""
import argparse
import json
import os
import random
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import Service  # noqa: E402

K, V, LEN, ALPHA, BETA, SWEEPS = 10, 500, 60, 0.1, 0.01, 300
D = 600  # documents per corpus (--documents)
STRENGTH = None  # topicd's seed_strength (--strength; None: the default)
DEFAULT_STRENGTH = 0.3  # topicd's default seed_strength (models::seeds::DEFAULT_STRENGTH)
SHARED = True  # a seed word shared with another topic (--no-shared: none)
SEEDED, SEED_WORDS = 3, 4
MODEL = "lda"  # topicd's family (--model)


def draw(replicate):
    rng = np.random.default_rng(1000 + replicate)
    phi = rng.dirichlet(np.full(V, 0.05), size=K)
    for s in range(SEEDED if SHARED else 0):
        # One of topic s's top 5 words is as heavy in topic s + 1 too.
        w = int(np.argsort(-phi[s])[rng.integers(0, 5)])
        phi[s + 1, w] = max(phi[s + 1, w], phi[s, w])
        phi[s + 1] /= phi[s + 1].sum()
    docs = []
    for d in range(D):
        theta = rng.dirichlet(np.full(K, 0.2))
        z = rng.choice(K, size=LEN, p=theta)
        words = [int(rng.choice(V, p=phi[t])) for t in z]
        counts = {}
        for w in words:
            counts[f"w{w:03d}"] = counts.get(f"w{w:03d}", 0) + 1
        docs.append(counts)
    seeds = [[f"w{int(w):03d}" for w in np.argsort(-phi[s])[:SEED_WORDS]] for s in range(SEEDED)]
    return phi, docs, seeds


def assignment(cost):
    """Minimum-cost assignment rows -> columns (square), by brute-force Hungarian."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost)
    return dict(zip(rows, cols))


def l1(a, b):
    return float(np.abs(a - b).sum())


def top_overlap(a, b, n=10):
    return len(set(np.argsort(-a)[:n]) & set(np.argsort(-b)[:n])) / n


LOST = 1.0  # a truth topic whose fitted topic is further than this (half of L1's range) is lost


def measures(truth, fitted, seeded_ids):
    """Seeded topics' L1 and top-10 overlap, the other topics' mean matched L1, every
    topic's mean L1 and whether a truth topic was lost (its topic more than LOST away:
    merged with another, or split). `seeded_ids[s]`: the fitted topic standing for truth
    topic s, or None (matched)."""
    cost = np.array([[l1(truth[i], fitted[j]) for j in range(K)] for i in range(K)])
    matched = assignment(cost)
    out_l1, out_top = [], []
    for s in range(SEEDED):
        j = seeded_ids[s] if seeded_ids[s] is not None else matched[s]
        out_l1.append(l1(truth[s], fitted[j]))
        out_top.append(top_overlap(truth[s], fitted[j]))
    taken = {seeded_ids[s] if seeded_ids[s] is not None else matched[s] for s in range(SEEDED)}
    rest_truth = list(range(SEEDED, K))
    rest_fit = [j for j in range(K) if j not in taken]
    sub = np.array([[l1(truth[i], fitted[j]) for j in rest_fit] for i in rest_truth])
    m = assignment(sub)
    rest = [sub[i, m[i]] for i in range(len(rest_truth))]
    every = out_l1 + rest
    return float(np.mean(out_l1)), float(np.mean(out_top)), float(np.mean(rest)), float(np.mean(every)), float(max(every) > LOST)


def topicd_phi(svc, corpus_id, seeds, replicate):
    params = {"topics": K, "alpha": ALPHA, "beta": BETA, "iterations": SWEEPS} if MODEL == "lda" else {"topics": K, "iterations": SWEEPS}
    if seeds:
        params["seed_words"] = [{"name": f"s{s}", "words": ws} for s, ws in enumerate(seeds)]
        if STRENGTH is not None:
            params["seed_strength"] = STRENGTH
    job = svc.fit(corpus_id, MODEL, params, seed=replicate)
    assert job["status"] == "succeeded", job
    page = svc.req("GET", f"/v1/models/{job['model_id']}/topics?n={V}&rank=frequency")
    phi = np.zeros((K, V))
    for t in page["topics"]:
        for w in t["words"]:
            phi[t["id"], int(w["word"][1:])] = w["frequency"]
    return phi / phi.sum(axis=1, keepdims=True)


def tomotopy_phi(docs, seeds, replicate, matched):
    import tomotopy as tp

    mdl = tp.LDAModel(k=K, alpha=ALPHA, eta=BETA, seed=replicate)
    totals = {}
    for counts in docs:
        words = [w for w, n in sorted(counts.items()) for _ in range(n)]
        mdl.add_doc(words)
        for w, n in counts.items():
            totals[w] = totals.get(w, 0) + n
    for s, ws in enumerate(seeds):
        for w in ws:
            if matched:
                strength = DEFAULT_STRENGTH if STRENGTH is None else STRENGTH
                mdl.set_word_prior(w, [BETA + np.ceil(strength * totals.get(w, 0)) if k == s else BETA for k in range(K)])
            else:
                mdl.set_word_prior(w, [1.0 if k == s else 0.1 for k in range(K)])
    mdl.train(SWEEPS, workers=1)
    phi = np.zeros((K, V))
    for k in range(K):
        for i, x in enumerate(mdl.get_topic_word_dist(k)):
            phi[k, int(mdl.used_vocabs[i][1:])] = x
    return phi / phi.sum(axis=1, keepdims=True)


def main():
    global D, STRENGTH, SHARED, MODEL
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--no-matched", action="store_true")
    ap.add_argument("--fit-seeds", type=int, default=1, help="fits per corpus and side (seeds r, 1000 + r, ...): more fits resolve the lost-topic counts")
    ap.add_argument("--documents", type=int, default=D)
    ap.add_argument("--strength", type=float)
    ap.add_argument("--no-shared", action="store_true", help="no seed word made heavy in another topic")
    ap.add_argument("--model", choices=["lda", "pcm"], default="lda", help="topicd's family")
    args = ap.parse_args()
    D, STRENGTH, SHARED, MODEL = args.documents, args.strength, not args.no_shared, args.model
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        svc = Service(os.path.abspath(args.binary), os.path.join(tmp, "seeded.db"), 18000 + random.randint(0, 999))
        try:
            for r in range(1, args.replicates + 1):
                truth, docs, seeds = draw(r)
                ndjson = "\n".join(json.dumps({"id": f"d{i}", "counts": c}) for i, c in enumerate(docs)).encode()
                corpus = svc.req("POST", "/v1/corpora?name=seeded&stopwords=none", ndjson, "application/x-ndjson")
                for fit_seed in [r] + [1000 * j + r for j in range(1, args.fit_seeds)]:
                    sides = {
                        f"topicd {MODEL} seeded": (topicd_phi(svc, corpus["id"], seeds, fit_seed), list(range(SEEDED))),
                        f"topicd {MODEL} unseeded": (topicd_phi(svc, corpus["id"], None, fit_seed), [None] * SEEDED),
                        "tomotopy set_word_prior (docs' usage)": (tomotopy_phi(docs, seeds, fit_seed, False), list(range(SEEDED))),
                    }
                    if not args.no_matched:
                        sides["tomotopy set_word_prior (topicd's prior)"] = (tomotopy_phi(docs, seeds, fit_seed, True), list(range(SEEDED)))
                    for name, (phi, ids) in sides.items():
                        rows.setdefault(name, []).append(measures(truth, phi, ids))
                    print(f"replicate {r} seed {fit_seed}: " + "; ".join(f"{n} {rows[n][-1][0]:.3f}/{rows[n][-1][2]:.3f}" for n in rows), file=sys.stderr)
        finally:
            svc.stop()
    fits = f" ({args.fit_seeds} fit seeds each)" if args.fit_seeds > 1 else ""
    print(f"| {args.replicates} replicates{fits}, K = {K}, V = {V}, D = {D} × {LEN} tokens | seeded topics' L1 to the truth | their top-10 overlap | other topics' matched L1 | every topic's L1 | fits that lost a planted topic |")
    print("|---|---|---|---|---|---|")
    for name, values in rows.items():
        a = np.array(values)
        mean, se = a.mean(axis=0), a.std(axis=0, ddof=1) / np.sqrt(len(a))
        print(f"| {name} | {mean[0]:.3f} ± {se[0]:.3f} | {mean[1]:.2f} ± {se[1]:.2f} | {mean[2]:.3f} ± {se[2]:.3f} | {mean[3]:.3f} ± {se[3]:.3f} | {int(a[:, 4].sum())} of {len(a)} |")


if __name__ == "__main__":
    main()
