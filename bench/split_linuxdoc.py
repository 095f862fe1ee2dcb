#!/usr/bin/env python3
"""Split bench/out/linuxdoc_bow.jsonl into training and held-out documents for the
LDA hyperparameter-optimisation benchmark (bench/lda_optimize.sh, bench/README.md).

Rule: document i (0-based line number) is held out when i % 10 == 9 (every tenth
document, 10 % of them); the rest are the training documents. Words of held-out
documents that never occur in a training document are dropped (neither model has
them in its vocabulary, so neither could score them), and held-out documents left
empty are dropped.

Writes, in bench/out/:
  linuxdoc_train.jsonl    training documents, {"id", "counts"} (tomotopy's input)
  linuxdoc_heldout.jsonl  held-out documents, {"id", "counts"} (scored for both)
  linuxdoc_split.jsonl    both, each with "split": "train" or "test" (topicd's input:
                          it trains on the "train" documents and scores the "test"
                          ones at the end of the fit)
and prints the document and token counts of each part as one JSON line.
"""
import json
import os

BENCH = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(BENCH, "out")


def main():
    docs = [json.loads(line) for line in open(os.path.join(OUT, "linuxdoc_bow.jsonl"), encoding="utf-8")]
    train = [d for i, d in enumerate(docs) if i % 10 != 9]
    vocabulary = {w for d in train for w in d["counts"]}
    heldout, dropped_tokens = [], 0
    for i, d in enumerate(docs):
        if i % 10 != 9:
            continue
        kept = {w: n for w, n in d["counts"].items() if w in vocabulary}
        dropped_tokens += sum(d["counts"].values()) - sum(kept.values())
        if kept:
            heldout.append({"id": d["id"], "counts": kept})

    def write(name, rows):
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, sort_keys=True) + "\n")

    write("linuxdoc_train.jsonl", train)
    write("linuxdoc_heldout.jsonl", heldout)
    write("linuxdoc_split.jsonl", [dict(d, split="train") for d in train] + [dict(d, split="test") for d in heldout])
    tokens = lambda rows: sum(sum(d["counts"].values()) for d in rows)
    print(json.dumps({"train_documents": len(train), "train_tokens": tokens(train), "vocabulary": len(vocabulary),
                      "heldout_documents": len(heldout), "heldout_tokens": tokens(heldout),
                      "heldout_tokens_dropped": dropped_tokens}))


if __name__ == "__main__":
    main()
