#!/usr/bin/env python3
"""HPC prediction speed on long documents, against scikit-learn's logistic regression.

Usage:
    python3 bench/hpc_predict_speed.py --bin NEW [--bin OLD ...] \
        [--data bench/out/linuxdoc.jsonl --source linuxdoc] [--docs 1500] [--rounds 2]

The split is bench/hpc_labels.py's (shuffle 3, 80 % uploaded with 15 % of it tagged
validation, 20 % predicted). HPC is fitted once, with the first binary, on a fresh
SQLite file (`--fit-param`, by default 100 scans, 20 of burn-in, no refit: the cost of
a prediction depends on the number of labels and the document's words, not on how long
the chain ran). Then, for each round and each binary and each instruction set of
HPC's prediction word pass (`TOPICD_HPC_ISA`: the processor's best, `avx2`,
`portable`; a binary that predates the switch ignores it), a server is started on that
file with `--threads 2`, warmed with one request (which loads the model), and sent the
test documents repeated to `--docs`, in requests of 500, one at a time. Reported:
documents per second through HTTP (tokenising, predicting and JSON included).

Every binary's answers to the test documents are compared with the first's: the
labels' probabilities and predicted sets (which do not go through the mode ξ*) and the
topic proportions (softmax of ξ*, found by L-BFGS to a gradient of 1e-4; builds that
seek the mode from different starts may land in different modes: the count of
documents whose proportions differ by more than 0.01 somewhere). For each binary the
table also gives how often the dominant topic of softmax(ξ*) is one of the document's
labels, a check of the mode that needs nothing but the answers.

The anchor, in the same run: one-vs-rest L2 logistic regression (C = 10) on TF-IDF,
as in bench/hpc_labels.py, predicting the same repeated documents in-process, once
from the vectorised matrix (`decision_function` only, the figure bench/hpc_labels.py
reports) and once from the texts (vectorising included).

Output: a Markdown table on stdout, JSON lines in bench/out/hpc_predict_speed.jsonl.
"""

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hpc_labels as H  # noqa: E402

ROOT = os.path.dirname(HERE)


def serve(binary, tmp, isa):
    """`binary` serving `tmp`'s database with the word pass on `isa`: (process, base URL)."""
    env = dict(os.environ)
    env.pop("TOPICD_HPC_ISA", None)
    if isa != "best":
        env["TOPICD_HPC_ISA"] = isa
    return H.start_service(binary, 2, tmp, env=env)


def post(base, path, body):
    req = urllib.request.Request(base + path, data=body, method="POST", headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return r.read()


def cpu_flags():
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    return "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "neither AVX2 nor AVX-512")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", required=True, help="topicd binary (repeat to compare builds; the first fits)")
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "out", "linuxdoc.jsonl"))
    ap.add_argument("--source", default="linuxdoc")
    ap.add_argument("--fit-param", action="append", default=[], help="key=value (JSON) for the HPC fit")
    ap.add_argument("--isa", default="best,avx2,portable")
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "hpc_predict_speed.jsonl"))
    args = ap.parse_args()

    fit, val, test = H.load_split(args.data, 3, args.source or None)
    params = {"threads": 2, "iterations": 100, "burn_in": 20, "refit_with_validation": False}
    for kv in args.fit_param:
        k, v = kv.split("=", 1)
        params[k] = json.loads(v)
    tmp = tempfile.mkdtemp(prefix="topicd_predict_speed_")
    rows = []
    try:
        proc, base = serve(args.bin[0], tmp, "best")
        try:
            corpus = H.upload_split(base, fit, val, (), args.source or "corpus")
            job = H.request(base, "POST", "/v1/jobs", {"corpus_id": corpus, "model": "hpc", "params": params, "seed": 1})
            while job["status"] not in ("succeeded", "failed", "cancelled"):
                time.sleep(1)
                job = H.request(base, "GET", f"/v1/jobs/{job['id']}")
            if job["status"] != "succeeded":
                sys.exit(f"HPC fit {job['status']}: {json.dumps(job)[:2000]}")
            model = job["model_id"]
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        docs = [{"id": d["id"], "text": d["text"]} for d in test]
        many = (docs * (args.docs // len(docs) + 1))[: args.docs]
        bodies = [json.dumps({"documents": many[i:i + 500]}).encode() for i in range(0, len(many), 500)]
        check_body = json.dumps({"documents": docs}).encode()
        answers = {}
        speeds = {}
        isas = args.isa.split(",")
        for rnd in range(args.rounds):
            for b, binary in enumerate(args.bin):
                for isa in isas:
                    proc, base = serve(binary, tmp, isa)
                    try:
                        out = json.loads(post(base, f"/v1/models/{model}/predict", check_body))["predictions"]
                        answers.setdefault(b, out)
                        start = time.perf_counter()
                        for body in bodies:
                            post(base, f"/v1/models/{model}/predict", body)
                        speeds.setdefault((b, isa), []).append(len(many) / (time.perf_counter() - start))
                    finally:
                        proc.terminate()
                        proc.wait(timeout=60)
        # How often the dominant topic of softmax(ξ*) is one of the document's labels
        # (AppStream and linuxdoc: every label is a topic), per binary: a plain check of
        # the mode's quality that needs no access to the density.
        gold = {d["id"]: set(H.truth(d)) for d in test}
        dominant = {}
        for b, out in answers.items():
            names = [p["label"] for p in out[0]["labels"]]
            assert all([p["label"] for p in x["labels"]] == names for x in out)
            hits = sum(names[max(range(len(names)), key=x["topic_proportions"].__getitem__)] in gold[x["id"]] for x in out)
            dominant[b] = hits / len(out)
        # Agreement of every binary's answers with the first binary's.
        agreement = {}
        for b in range(1, len(args.bin)):
            same_sets = sum(x["predicted_labels"] == y["predicted_labels"] for x, y in zip(answers[0], answers[b]))
            pairs = list(zip(answers[0], answers[b]))
            assert all([p["label"] for p in x["labels"]] == [p["label"] for p in y["labels"]] for x, y in pairs)
            prob = max(abs(p["probability"] - q["probability"]) for x, y in pairs for p, q in zip(x["labels"], y["labels"]))
            per_doc = [max(abs(p - q) for p, q in zip(x["topic_proportions"], y["topic_proportions"])) for x, y in pairs]
            theta = max(per_doc)
            # A document whose proportions differ by more than 0.01 somewhere landed in
            # another mode (the same mode agrees to about 1e-4, the optimiser's tolerance).
            other_mode = sum(v > 0.01 for v in per_doc)
            agreement[b] = {"same_predicted_sets": same_sets, "documents": len(docs), "max_label_probability_difference": prob,
                            "max_topic_proportion_difference": theta, "documents_in_another_mode": other_mode}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # The anchor: logistic regression in-process on the same split.
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import MultiLabelBinarizer

    y_fit = MultiLabelBinarizer().fit_transform([H.truth(d) for d in fit])
    vec = TfidfVectorizer(stop_words="english")
    clf = OneVsRestClassifier(LogisticRegression(C=10, max_iter=2000)).fit(vec.fit_transform([d["text"] for d in fit]), y_fit)
    texts = [d["text"] for d in many]
    x = vec.transform(texts)
    lr_scores, lr_texts = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        clf.decision_function(x)
        lr_scores.append(len(texts) / (time.perf_counter() - start))
        start = time.perf_counter()
        clf.decision_function(vec.transform(texts))
        lr_texts.append(len(texts) / (time.perf_counter() - start))
    lr = max(lr_scores)

    words = sum(len(d["text"].split()) for d in test) / len(test)
    print(f"{len(test)} test documents ({words:.0f} whitespace words each on average), repeated to {len(many)}; "
          f"{os.cpu_count()} cores, {cpu_flags()}, {platform.machine()}; best of {args.rounds} rounds\n")
    print("| system | documents/s | ratio to logistic regression (scores only) | dominant topic among the document's labels |")
    print("|---|---|---|---|")
    for b, binary in enumerate(args.bin):
        for isa in isas:
            best = max(speeds[(b, isa)])
            name = f"topicd HPC, `{binary}`, word pass {isa} (HTTP, 2 threads)"
            print(f"| {name} | {best:.0f} | {best / lr:.3f} | {dominant[b]:.3f} |")
            rows.append({"system": name, "binary": binary, "isa": isa, "docs_per_s": speeds[(b, isa)], "dominant_topic_in_labels": dominant[b], **({"agreement": agreement[b]} if b in agreement else {})})
    print(f"| L2 logistic regression (C=10), scores from TF-IDF (in-process) | {lr:.0f} | 1 | |")
    print(f"| L2 logistic regression (C=10), from the texts (in-process) | {max(lr_texts):.0f} | {max(lr_texts) / lr:.3f} | |")
    rows.append({"system": "logistic regression", "scores_docs_per_s": lr_scores, "texts_docs_per_s": lr_texts})
    for b, a in agreement.items():
        print(f"\n`{args.bin[b]}` against `{args.bin[0]}`: same predicted sets in {a['same_predicted_sets']} of {a['documents']} documents; "
              f"largest difference in a label probability {a['max_label_probability_difference']:.3g}, "
              f"in a topic proportion {a['max_topic_proportion_difference']:.3g}; "
              f"documents whose proportions differ by more than 0.01 (another mode): {a['documents_in_another_mode']}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
