#!/usr/bin/env python3
"""Drift: an LDA fitted on the early years of a dated corpus, updated with the later
years and `new_topics`: are the new topics about what is new, and do the old topics keep
their ids? (bench/README.md, *Updates*)

Corpus: the Debian changelog entries bench/dated_corpus.py builds from the machine's
`/usr/share/doc/*/changelog.Debian.gz` (its defaults: entries of at least 8 words,
their first 200 words, at most 12 000 entries), sorted by date. The OLD documents are
the entries before the date at the `--split` quantile (0.8), the NEW ones the rest.
Uploaded with English stop words, `min_df` 5, `max_df` 0.5 (the new documents with
`?like=`, which keeps every old word's id and adds the new words the new documents
alone would keep).

Fits: LDA K = `--topics` (15; alpha 0.1, beta 0.01, 400 sweeps, seed 1) on the old
entries; then `POST /v1/models/{id}/update` with the new entries, `--new-topics` (2)
and 100 sweeps; beside it the same update with no new topics.

Reported: each new topic's top 10 words (by frequency) and how many of them are *new
or rising*: absent from the old documents, or at least `--rise` (3) times as frequent
per token in the new documents as in the old ones; the same count averaged over the
old topics as the baseline; each topic's share of the new documents' tokens (its
proportion among the update's θ rows of the new documents is not served, so the share
is the topic's tokens in the whole updated model); and for the old topics, the
similarity of each to the parent's topic of the same id (1 - L1/2 over the words
`GET /compare` pairs) with the pairs that kept their id.

`--model hdp` fits HDP instead (truncation `--topics`, merges every pass and births
every second, so it infers K; `--parent-iterations` and `--update-iterations` are then
passes, 40 and 10 by default): its added topics are the `new_topics` ones (started on the
words the parent does not predict, kept) and any born in the update, every id from the parent's number of topics on.

With `--replicates N`, parents and updates of seeds 2..N too, and for each seed the
best new topic's count and the old topics' mean, by frequency and by FREX.

Usage: python3 bench/updates_drift.py target/release/topicd [--model lda|hdp] [--topics 15] [--new-topics 2] [--split 0.8] [--replicates 5]
"""
import argparse
import collections
import json
import os
import random
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import Service, job_seconds  # noqa: E402
import dated_corpus  # noqa: E402


def word_counts(svc, corpus_id):
    """Every word's count over the corpus (from `GET /v1/corpora/{id}/tokens`)."""
    with urllib.request.urlopen(svc.base + f"/v1/corpora/{corpus_id}/tokens", timeout=600) as f:
        counts = collections.Counter()
        for line in f.read().decode().splitlines():
            d = json.loads(line)
            if "tokens" in d:
                counts.update(d["tokens"])
            else:
                counts.update(d["counts"])
    return counts


def topic_words(svc, model):
    """The model's topics with their top 10 words by frequency (`words`) and by FREX."""
    topics = svc.req("GET", f"/v1/models/{model}/topics?n=10&rank=frequency")["topics"]
    frex = {t["id"]: [w["word"] for w in t["words"]] for t in svc.req("GET", f"/v1/models/{model}/topics?n=10&rank=frex")["topics"]}
    for t in topics:
        t["frex"] = frex[t["id"]]
    return topics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--topics", type=int, default=15)
    ap.add_argument("--new-topics", type=int, default=2)
    ap.add_argument("--split", type=float, default=0.8)
    ap.add_argument("--rise", type=float, default=3.0)
    ap.add_argument("--model", choices=["lda", "hdp"], default="lda")
    ap.add_argument("--parent-iterations", type=int, default=None, help="sweeps (LDA, 400) or passes (HDP, 40)")
    ap.add_argument("--update-iterations", type=int, default=None, help="sweeps (LDA, 100) or passes (HDP, 10)")
    ap.add_argument("--replicates", type=int, default=1, help="seeds 1..N of parent and update (the tables show seed 1)")
    args = ap.parse_args()
    hdp = args.model == "hdp"
    args.parent_iterations = args.parent_iterations or (40 if hdp else 400)
    args.update_iterations = args.update_iterations or (10 if hdp else 100)
    docs, summary = dated_corpus.build_corpus(8, 12000, 200)
    for d in docs:
        d.pop("meta", None)
    cut = docs[int(len(docs) * args.split)]["covariates"]["date"]
    old_docs = [d for d in docs if d["covariates"]["date"] < cut]
    new_docs = [d for d in docs if d["covariates"]["date"] >= cut]
    tmp = tempfile.mkdtemp()
    svc = Service(os.path.abspath(args.binary), os.path.join(tmp, "topicd.db"), 19000 + random.randrange(1000))
    try:
        pre = {"stopwords": "english", "min_df": 5, "max_df": 0.5}
        old = svc.req("POST", "/v1/corpora", {"name": "before", "documents": old_docs, "preprocess": pre})
        new = svc.req("POST", f"/v1/corpora?like={old['id']}", {"name": "after", "documents": new_docs})
        if hdp:
            params = {"topics": args.topics, "merge_every": 1, "birth_every": 2, "passes": args.parent_iterations}
        else:
            params = {"topics": args.topics, "alpha": 0.1, "beta": 0.01, "iterations": args.parent_iterations}
        parent = svc.fit(old["id"], args.model, params, seed=1)
        assert parent["status"] == "succeeded", parent
        # Added topics take the ids from the parent's number of topics on.
        args.topics = svc.req("GET", f"/v1/models/{parent['model_id']}")["num_topics"]
        runs = {}
        for label, new_topics in (("with new topics", args.new_topics), ("without", 0)):
            job = svc.req("POST", f"/v1/models/{parent['model_id']}/update", {"corpus_id": new["id"], "iterations": args.update_iterations, "seed": 1, "new_topics": new_topics})
            job = svc.wait(job)
            model = job["model_id"]
            topics = topic_words(svc, model)
            compare = svc.req("GET", f"/v1/models/{parent['model_id']}/compare/{model}")
            runs[label] = (model, topics, compare, job_seconds(job))
        replicates = [runs["with new topics"][1]]
        for seed in range(2, args.replicates + 1):
            other = svc.fit(old["id"], args.model, params, seed=seed)
            job = svc.wait(svc.req("POST", f"/v1/models/{other['model_id']}/update", {"corpus_id": new["id"], "iterations": args.update_iterations, "seed": seed, "new_topics": args.new_topics}))
            k_other = svc.req("GET", f"/v1/models/{other['model_id']}")["num_topics"]
            # Ids as seed 1's parent numbers them: a replicate's added topics are ≥ its own parent's K.
            replicates.append([dict(t, id=t["id"] - k_other + args.topics) for t in topic_words(svc, job["model_id"])])
        old_counts, new_counts = word_counts(svc, old["id"]), word_counts(svc, new["id"])
    finally:
        svc.stop()
    old_total, new_total = sum(old_counts.values()), sum(new_counts.values())

    def rising(word):
        before = old_counts.get(word, 0) / old_total
        after = new_counts.get(word, 0) / new_total
        return before == 0 or after >= args.rise * before

    print(f"Debian changelogs: {len(old_docs)} entries before {cut}, {len(new_docs)} from it; {old_total} and {new_total} tokens; "
          f"new words in the lexicon: {new['num_terms'] - old['num_terms']}; {args.model.upper()} K = {args.topics}; parent {args.parent_iterations} sweeps ({job_seconds(parent):.1f} s), "
          f"updates {args.update_iterations}; load average {os.getloadavg()[0]:.2f}")
    risers = [w for w, _ in new_counts.most_common() if rising(w)][:15]
    print(f"The new documents' most frequent new or rising words: {', '.join(risers)}")
    print()
    model, topics, compare, update_s = runs["with new topics"]
    print(f"| topic (update with {args.new_topics} new topics, {update_s:.1f} s) | share of tokens | top 10 words by frequency | new or rising (×{args.rise:g}) | top 10 by FREX | new or rising |")
    print("|---|---|---|---|---|---|")
    old_rising, old_rising_frex = [], []
    for t in topics:
        words = [w["word"] for w in t["words"]]
        n, n_frex = sum(rising(w) for w in words), sum(rising(w) for w in t["frex"])
        if t["id"] >= args.topics:
            print(f"| {t['id']} (new) | {t.get('proportion', 0):.3f} | {', '.join(words)} | {n}/10 | {', '.join(t['frex'])} | {n_frex}/10 |")
        else:
            old_rising.append(n)
            old_rising_frex.append(n_frex)
    print(f"| old topics (mean of {len(old_rising)}) | | | {sum(old_rising) / len(old_rising):.1f}/10 | | {sum(old_rising_frex) / len(old_rising_frex):.1f}/10 |")
    print()
    print("| update | old topics on their own id | mean similarity to the parent's topic of the same id |")
    print("|---|---|---|")
    out = {"cut": cut, "old": len(old_docs), "new": len(new_docs)}
    for label, (model, topics, compare, s) in runs.items():
        pairs = [p for p in compare["pairs"] if p["a"]["id"] < args.topics]
        same = [p for p in pairs if p["b"]["id"] == p["a"]["id"]]
        mean = sum(p["similarity"] for p in same) / max(1, len(same))
        print(f"| {label} | {len(same)}/{args.topics} | {mean:.3f} |")
        out[label] = {"same_id": len(same), "mean_similarity_same_id": mean, "seconds": s}
    out["new_topic_rising"] = [sum(rising(w["word"]) for w in t["words"]) for t in runs["with new topics"][1] if t["id"] >= args.topics]
    out["old_topic_rising_mean"] = sum(old_rising) / len(old_rising)
    out["new_topic_rising_frex"] = [sum(rising(w) for w in t["frex"]) for t in runs["with new topics"][1] if t["id"] >= args.topics]
    out["old_topic_rising_frex_mean"] = sum(old_rising_frex) / len(old_rising_frex)
    if args.replicates > 1:
        def best(topics, key, new):
            counts = [sum(rising(w) for w in (t["frex"] if key == "frex" else [x["word"] for x in t["words"]])) for t in topics if (t["id"] >= args.topics) == new]
            return (max(counts) if counts else 0) if new else sum(counts) / len(counts)
        summary = {f"{key}_{side}": [best(r, key, side == "best_new") for r in replicates] for key in ("frequency", "frex") for side in ("best_new", "old_mean")}
        print()
        print(f"| seeds 1–{args.replicates} | best new topic's new or rising words, by frequency | by FREX | old topics' mean, by frequency | by FREX |")
        print("|---|---|---|---|---|")
        mean = lambda xs: sum(xs) / len(xs)
        print(f"| per seed | {summary['frequency_best_new']} | {summary['frex_best_new']} | {[round(x, 1) for x in summary['frequency_old_mean']]} | {[round(x, 1) for x in summary['frex_old_mean']]} |")
        print(f"| mean | {mean(summary['frequency_best_new']):.1f}/10 | {mean(summary['frex_best_new']):.1f}/10 | {mean(summary['frequency_old_mean']):.1f}/10 | {mean(summary['frex_old_mean']):.1f}/10 |")
        out["replicates"] = summary
    print(json.dumps(out))


if __name__ == "__main__":
    main()
