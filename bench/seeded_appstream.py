#!/usr/bin/env python3
"""Seeded topics on AppStream: does a topic seeded with words naming a menu category
find that category's applications? (bench/README.md, *Seeded topics*)

AppStream (../shared/data/appstream.jsonl, 2 017 applications) is uploaded with its
English stop words removed and `min_df` 2, with its menu categories as labels. Eight
seeds name eight of its largest categories, with words a user would type for them
(chosen once, before any run, and not changed since):

  Game: game, play, player, level · AudioVideo: audio, video, music, sound ·
  Graphics: image, graphics, photo, drawing · Education: learning, education,
  students, teach · Science: science, scientific, data, analysis · Network: network,
  internet, server, web · Development: development, code, programming, debugger ·
  Office: office, document, spreadsheet, documents

topicd fits LDA with K = 20 (alpha 0.1, beta 0.01, 400 sweeps, seed 1..3) seeded and
unseeded; every application's topic proportions come from the model's own prediction
(fold-in, the same for both). An application belongs to a topic when the topic holds
at least 0.2 of it. For each seeded category: the F1 of seeded topic s's applications
against the category's, beside unseeded LDA's best topic for that category (the topic
with the highest F1: favourable to it). Prints a table of each category's F1 (mean of
the seeds) and the mean over categories.

With `--model pcm` the seeded side is PCM (K = 20, 200 scans, its defaults: seed_strength
0.1); the anchor stays unseeded LDA's best topic, what a user would compare with.

Usage: python3 bench/seeded_appstream.py target/release/topicd [--seeds 1,2,3] [--model pcm]
"""
import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import APPSTREAM, Service  # noqa: E402

SEEDS = [
    ("Game", ["game", "play", "player", "level"]),
    ("AudioVideo", ["audio", "video", "music", "sound"]),
    ("Graphics", ["image", "graphics", "photo", "drawing"]),
    ("Education", ["learning", "education", "students", "teach"]),
    ("Science", ["science", "scientific", "data", "analysis"]),
    ("Network", ["network", "internet", "server", "web"]),
    ("Development", ["development", "code", "programming", "debugger"]),
    ("Office", ["office", "document", "spreadsheet", "documents"]),
]
K, THRESHOLD = 20, 0.2


def f1(members, gold):
    tp = len(members & gold)
    if tp == 0:
        return 0.0
    p, r = tp / len(members), tp / len(gold)
    return 2 * p * r / (p + r)


def proportions(svc, model_id, docs):
    out = []
    for i in range(0, len(docs), 100):
        batch = [{"id": d["id"], "text": d["text"]} for d in docs[i:i + 100]]
        out += [p["topic_proportions"] for p in svc.req("POST", f"/v1/models/{model_id}/predict", {"documents": batch})["predictions"]]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--model", choices=["lda", "pcm"], default="lda", help="the seeded side's family")
    args = ap.parse_args()
    docs = [json.loads(line) for line in open(APPSTREAM, encoding="utf-8")]
    gold = {cat: {i for i, d in enumerate(docs) if cat in d.get("labels", [])} for cat, _ in SEEDS}
    table = {cat: {"seeded": [], "lda": []} for cat, _ in SEEDS}
    with tempfile.TemporaryDirectory() as tmp:
        svc = Service(os.path.abspath(args.binary), os.path.join(tmp, "appstream.db"), 18000 + random.randint(0, 999))
        try:
            corpus = svc.upload(APPSTREAM, "name=appstream&duplicate_ids=keep_first&stopwords=english&min_df=2")
            base = {"topics": K, "alpha": 0.1, "beta": 0.01, "iterations": 400}
            seed_words = [{"name": cat, "words": words} for cat, words in SEEDS]
            for seed in [int(s) for s in args.seeds.split(",")]:
                runs = {}
                seeded_base = base if args.model == "lda" else {"topics": K, "iterations": 200}
                for side, params in [("seeded", {**seeded_base, "seed_words": seed_words, "missing_seed_words": "ignore"}), ("lda", base)]:
                    job = svc.fit(corpus["id"], args.model if side == "seeded" else "lda", params, seed=seed)
                    assert job["status"] == "succeeded", job
                    theta = proportions(svc, job["model_id"], docs)
                    runs[side] = [{i for i, t in enumerate(theta) if t[k] >= THRESHOLD} for k in range(K)]
                    if side == "seeded":
                        missing = svc.req("GET", f"/v1/models/{job['model_id']}")["diagnostics"]["seeds"]["missing_words"]
                        if missing:
                            print(f"seed {seed}: seed words left out: {missing}", file=sys.stderr)
                for s, (cat, _) in enumerate(SEEDS):
                    table[cat]["seeded"].append(f1(runs["seeded"][s], gold[cat]))
                    table[cat]["lda"].append(max(f1(members, gold[cat]) for members in runs["lda"]))
                print(f"seed {seed} done", file=sys.stderr)
        finally:
            svc.stop()
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"| AppStream, K = {K}, seeds {args.seeds} | applications | seeded {args.model} topic F1 | unseeded LDA's best topic F1 |")
    print("|---|---|---|---|")
    for cat, _ in SEEDS:
        print(f"| {cat} | {len(gold[cat])} | {mean(table[cat]['seeded']):.3f} | {mean(table[cat]['lda']):.3f} |")
    print(f"| mean over the 8 categories | | {mean([mean(table[c]['seeded']) for c, _ in SEEDS]):.3f} | {mean([mean(table[c]['lda']) for c, _ in SEEDS]):.3f} |")


if __name__ == "__main__":
    main()
