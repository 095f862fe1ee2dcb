#!/usr/bin/env python3
"""Letting an HDP, HPC or PCM grow (issue 60): is updating a fitted model with new
documents as good as refitting it on every document, and how much cheaper?

Protocol (one run, one machine, one job at a time). The corpus' documents are shuffled
with `--split-seed`; 10 % are TEST documents (tagged `split: test` in every corpus, so
every model holds them out and scores them on the same documents), of the rest the
first 80 % are OLD, the others NEW:
  parent   the family (`--model`, hdp by default) on the old (and test) documents,
           `--passes` P passes (HDP, at most) or scans (HPC, PCM);
  update   the new documents uploaded with `?like=` the parent's corpus, then
           `POST /v1/models/{parent}/update` with U passes or scans (`--update-passes`,
           `new_topics` 0 and `--new-topics`; HPC takes no new topics);
  refits   the family on old + test + new from scratch, P + U passes or scans, seeds 1
           and 2: the anchor (gensim, bnpy and R's stm have no update that keeps a
           model's topics; HDP's refits against theirs are bench/gensim_hdp.py's and
           bench/bnpy_hdp.py's, HPC's labels against logistic regression
           bench/hpc_labels.py's).
The params are `--params` (JSON, over the family's defaults; PCM gets 20 topics), with
`test_fraction` 0 (the tags split). Reported: the test score (HDP: held-out nats per
token by document completion, each test document's odd-hashed tokens given its even
ones; HPC: micro- and macro-F1 of the predicted label sets; PCM has neither), topics,
fit seconds (the update's as a fraction of the mean refit's), and the topic comparison
(`/compare`: mean similarity, topics with the same id) of the update against its parent
and of the two refits against each other. AppStream documents keep their menu
categories as labels (HPC reads them; the others ignore them).

Usage: python3 bench/updates_families.py target/release/topicd [--model hdp|hpc|pcm] [--corpus appstream|linuxdoc] [--passes 40] [--update-passes 10] [--new-topics 5] [--threads 2] [--params '{"merge_every": 1, "birth_every": 2}']
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from updates import APPSTREAM, BENCH, SEED, Server, compare, load_documents, log, seconds, split  # noqa: E402


def tagged(docs, tag):
    return [dict(d, split=tag) for d in docs]


def score(diagnostics):
    """The test score a model reports: (text for the table, its JSON)."""
    h = diagnostics.get("heldout")
    if h:
        return f"{h['per_token']:.4f} nats/token", {"heldout_per_token": h["per_token"], "heldout_tokens": h["heldout_tokens"]}
    e = (diagnostics.get("evaluation") or {}).get("model")
    if e:
        return f"micro-F1 {e['micro']['f1']:.3f}, macro-F1 {e['macro']['f1']:.3f}", {"micro_f1": e["micro"]["f1"], "macro_f1": e["macro"]["f1"], "documents": e["documents"]}
    return "", {}


def fitted(svc, job, timeout, what):
    job = svc.wait(job, timeout, what)
    m = svc.must("GET", f"/v1/models/{job['model_id']}")
    text, scores = score(m.get("diagnostics") or {})
    out = dict({"model_id": job["model_id"], "seconds": seconds(job), "topics": m["num_topics"], "score": text}, **scores)
    log(f"{what}: {out['topics']} topics, {text}, {out['seconds']:.1f} s")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--model", choices=["hdp", "hpc", "pcm"], default="hdp")
    ap.add_argument("--corpus", choices=["appstream", "linuxdoc"], default="appstream")
    ap.add_argument("--passes", type=int, default=None, help="HDP's passes (40) or HPC's and PCM's scans (200)")
    ap.add_argument("--update-passes", type=int, default=None, help="a quarter of --passes by default")
    ap.add_argument("--new-topics", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--split-seed", type=int, default=1)
    ap.add_argument("--params", default="{}")
    ap.add_argument("--timeout", type=int, default=7200)
    args = ap.parse_args()
    P = args.passes or (40 if args.model == "hdp" else 200)
    U = args.update_passes or P // 4
    extra = json.loads(args.params)
    if args.model == "pcm":
        extra = dict({"topics": 20}, **extra)
    length = "passes" if args.model == "hdp" else "iterations"
    params = lambda n: dict({length: n, "test_fraction": 0}, **extra)  # noqa: E731
    if args.model == "hpc":
        args.new_topics = 0
    docs = load_documents(args.corpus)
    if args.corpus == "appstream":
        categories = {str(d["id"]): d.get("labels") for d in map(json.loads, open(APPSTREAM, encoding="utf-8"))}
        docs = [dict(d, labels=categories[d["id"]]) if categories.get(d["id"]) else d for d in docs]
    old, new, test = split(docs, args.split_seed)
    preprocess = {"stopwords": "english", "min_df": 1} if args.corpus == "appstream" else {"stopwords": "none", "min_df": 1}
    res = {"model": args.model, "corpus": args.corpus, "documents": {"old": len(old), "new": len(new), "test": len(test)}, "params": params(P), "update_passes": U,
           "threads": args.threads, "split_seed": args.split_seed, "load_average": os.getloadavg()[0],
           "commit": subprocess.run(["git", "-C", os.path.dirname(BENCH), "describe", "--always", "--dirty=+uncommitted changes"], capture_output=True, text=True).stdout.strip()}
    with tempfile.TemporaryDirectory() as tmp:
        svc = Server(args.binary, tmp, 18000 + random.randint(0, 999), args.threads)
        try:
            c_old = svc.must("POST", "/v1/corpora", {"name": "old+test", "documents": tagged(old, "train") + tagged(test, "test"), "preprocess": preprocess})
            c_full = svc.must("POST", "/v1/corpora", {"name": "old+test+new", "documents": tagged(old, "train") + tagged(test, "test") + tagged(new, "train"), "preprocess": preprocess})
            # Categories the old documents never had are dropped (HPC's tree is the parent's).
            c_new = svc.must("POST", f"/v1/corpora?like={c_old['id']}&unknown=drop", {"name": "new", "documents": tagged(new, "train")})
            runs = {}
            runs["parent"] = fitted(svc, svc.must("POST", "/v1/jobs", {"corpus_id": c_old["id"], "model": args.model, "params": params(P), "seed": SEED}), args.timeout, "parent")
            for n in sorted({0, args.new_topics}):
                body = {"corpus_id": c_new["id"], "iterations": U, "seed": SEED, "new_topics": n}
                runs[f"update_new{n}"] = fitted(svc, svc.must("POST", f"/v1/models/{runs['parent']['model_id']}/update", body), args.timeout, f"update, new_topics {n}")
            for s in (1, 2):
                runs[f"refit{s}"] = fitted(svc, svc.must("POST", "/v1/jobs", {"corpus_id": c_full["id"], "model": args.model, "params": params(P + U), "seed": s}), args.timeout, f"refit seed {s}")
            res["runs"] = runs
            res["compare"] = {"refit1_vs_refit2": compare(svc, runs["refit1"]["model_id"], runs["refit2"]["model_id"])}
            for name in runs:
                if name.startswith("update"):
                    res["compare"][f"parent_vs_{name}"] = compare(svc, runs["parent"]["model_id"], runs[name]["model_id"])
        finally:
            svc.stop()
    refit_s = (res["runs"]["refit1"]["seconds"] + res["runs"]["refit2"]["seconds"]) / 2
    print(f"{args.corpus}: {len(old)} old, {len(new)} new, {len(test)} test documents; {args.model.upper()} {json.dumps(params(P))}, update {U} {length}, {args.threads} threads")
    print("| | test score | topics | seconds | time / mean refit | topic similarity to parent (same ids) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in res["runs"].items():
        c = res["compare"].get(f"parent_vs_{name}")
        sim = f"{c['mean_similarity']:.3f} ({c['same_id']}/{c['pairs']})" if c else ""
        print(f"| {name} | {r['score']} | {r['topics']} | {r['seconds']:.1f} | {r['seconds'] / refit_s:.2f} | {sim} |")
    c = res["compare"]["refit1_vs_refit2"]
    print(f"refit seed 1 vs seed 2: mean similarity {c['mean_similarity']:.3f} ({c['same_id']}/{c['pairs']} same ids)")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
