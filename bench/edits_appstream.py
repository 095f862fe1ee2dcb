#!/usr/bin/env python3
"""Edits on AppStream: does a merge, a split and a delete refit faster than the parent
fit, and do the topics the edit did not touch stay where they were? (bench/README.md,
*Edits*)

AppStream (../shared/data/appstream.jsonl, 2 017 applications) is uploaded with its
English stop words removed and `min_df` 2. The parent is LDA with K = 20 (alpha 0.1,
beta 0.01, `--parent-iterations` sweeps, seed 1); a second parent with seed 2 gives the
anchor: how far two seeds of the same fit are from each other. The edits are the ones a
user would make from the parent's topic list, chosen by rule:

  merge: the two most similar topics (largest 1 - L1/2 between their word distributions)
  split: the largest topic into 2 (no seeds: the restricted run divides it)
  delete: the smallest topic

Each edit refits with `--iterations` sweeps (default: the server's, a quarter of the
parent's; seed 5). Reported per edit: the refit's time
as a fraction of the parent's (jobs' started_at to finished_at, same server, one job at
a time) and the untouched topics' mean L1 distance to the parent's topic of the same id;
beside them, the mean L1 between the two parents' topics as `GET /compare` matches them.
L1 is over the word distributions (0: the same, 2: disjoint).

With `--model pcm` the parent is PCM with K = 20 at its defaults (`--parent-iterations`
scans, 200 unless given); its retired slots are left out of the distances as LDA's are.
With `--model hdp` the parent is HDP at its defaults with truncation 20
(`--parent-iterations` passes, 50 unless given): K is what its deletes leave, and the
refits count passes. With `--model dcnt` the parent is DCNT with K = 20 at its defaults
(4 chains of `--parent-iterations` scans, 1 000 unless given, and the held-out
documents' Chib estimate after them, which every refit repeats); its retired slots are
left out as LDA's are.

Usage: python3 bench/edits_appstream.py target/release/topicd [--model pcm|hdp|dcnt] [--parent-iterations 400] [--iterations N]
"""
import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import APPSTREAM, Service, job_seconds  # noqa: E402

K = 20


def distributions(svc, model_id, normalise):
    """Each topic's word distribution over the words the topic list shows (the top 1000
    by frequency, which hold nearly all of a topic's mass), as {word: weight}; with
    `normalise`, each row divided by its sum."""
    topics = svc.req("GET", f"/v1/models/{model_id}/topics?n=1000&rank=frequency")["topics"]
    rows = [{w["word"]: w["frequency"] for w in t["words"]} for t in topics]
    if normalise:
        # PCM serves Poisson rates: compare their distributions (a retired row stays 0).
        rows = [{w: x / (sum(r.values()) or 1.0) for w, x in r.items()} for r in rows]
    return rows, topics


def l1(a, b):
    return sum(abs(a.get(w, 0.0) - b.get(w, 0.0)) for w in set(a) | set(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--model", choices=["lda", "pcm", "hdp", "dcnt"], default="lda")
    ap.add_argument("--parent-iterations", type=int, default=None, help="the parent's sweeps (default 400 for LDA, 200 for PCM, 50 passes for HDP, 1000 for DCNT)")
    ap.add_argument("--iterations", type=int, default=None, help="the refits' sweeps (default: the server's, a quarter of the parent's)")
    args = ap.parse_args()
    if args.parent_iterations is None:
        args.parent_iterations = {"lda": 400, "pcm": 200, "hdp": 50, "dcnt": 1000}[args.model]
    with tempfile.TemporaryDirectory() as tmp:
        svc = Service(os.path.abspath(args.binary), os.path.join(tmp, "edits.db"), 18000 + random.randint(0, 999))
        try:
            corpus = svc.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first&stopwords=english&min_df=2")
            length = "passes" if args.model == "hdp" else "iterations"
            params = {"topics": K, length: args.parent_iterations}
            if args.model == "lda":
                params.update({"alpha": 0.1, "beta": 0.01})
            parents = [svc.fit(corpus["id"], args.model, params, seed=s) for s in (1, 2)]
            for p in parents:
                assert p["status"] == "succeeded", p
            parent_id = parents[0]["model_id"]
            parent_time = job_seconds(parents[0])
            phi, topics = distributions(svc, parent_id, args.model == "pcm")
            k = len(phi)
            pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
            merge = min(pairs, key=lambda ab: l1(phi[ab[0]], phi[ab[1]]))
            by_size = sorted(range(k), key=lambda t: topics[t]["proportion"])
            split, delete = by_size[-1], by_size[0]
            if delete in merge:
                delete = by_size[1]
            cmp = svc.req("GET", f"/v1/models/{parents[0]['model_id']}/compare/{parents[1]['model_id']}")
            two_seeds = sum(2 * (1 - p["similarity"]) for p in cmp["pairs"]) / len(cmp["pairs"])
            edits = [
                ("merge", {"op": "merge", "topics": list(merge)}, set(merge)),
                ("split", {"op": "split", "topic": split, "into": 2}, {split}),
                ("delete", {"op": "delete", "topic": delete}, {delete}),
            ]
            rows, words = [], []
            for name, op, touched in edits:
                body = {"operations": [op], "seed": 5}
                if args.iterations:
                    body["iterations"] = args.iterations
                job = svc.wait(svc.req("POST", f"/v1/models/{parent_id}/edits", body))
                sweeps = job["params"][length]
                child, child_topics = distributions(svc, job["model_id"], args.model == "pcm")
                untouched = [t for t in range(k) if t not in touched]
                moved = sum(l1(child[t], phi[t]) for t in untouched) / len(untouched)
                rows.append((name, op, job_seconds(job), moved, sweeps))
                top = lambda t: ", ".join(w["word"] for w in t["words"][:6])  # noqa: E731
                before = "; ".join(f"{t}: {top(topics[t])}" for t in sorted(touched))
                after = "; ".join(f"{i}: {top(t)}" + (f" ({t['retired']})" if "retired" in t else "") for i, t in enumerate(child_topics) if i in touched or i >= k)
                words.append(f"- {name}: before {before} → after {after}")
                print(f"{name} done", file=sys.stderr)
        finally:
            svc.stop()
    print(f"| AppStream, {args.model.upper()} K = {k} (asked {K}): parent {args.parent_iterations} {length} ({parent_time:.1f} s) | refit {length} | refit time / parent's | untouched topics' mean L1 to the parent |")
    print("|---|---|---|---|")
    for name, op, t, moved, sweeps in rows:
        print(f"| {name} `{json.dumps(op)}` | {sweeps} | {t / parent_time:.2f} ({t:.1f} s) | {moved:.3f} |")
    print(f"| two seeds of the parent (matched by `/compare`) | | | {two_seeds:.3f} |")
    print()
    print("\n".join(words))


if __name__ == "__main__":
    main()
