#!/usr/bin/env python3
"""gensim's HdpModel on the same tokens topicd sees, for bench/hdp_vs_gensim.sh.

Subcommands (each prints one JSON line):

  split      --input BOW --out JSONL [--test-every 5]
             Write the corpus with `counts` and a `split` tag ("test" for every
             5th document, by line number, else "train"), the file both systems read.
             Only words of two or more ASCII letters are kept (topicd would re-tokenise
             "break-up" or "1975" and drops one-letter words, and the two systems
             would see different tokens),
             and words that no training document contains are dropped from the test
             documents (both counted), so both systems score the same tokens over
             the same vocabulary.

  completion --input JSONL [--passes N] [--seed S] [--chunksize C] [--T T] [--K K]
             Train HdpModel on the "train" documents (N passes over them, online
             VI in chunks) and score the "test" documents by document completion:
             the observed half of each test document fixes its topic weights
             (gensim's own `inference`, normalised), the held-out half is scored
             by log sum_k theta_k beta_kw per token, beta from `hdp_to_lda()`.
             The token split is topicd's (src/models/completion.rs): token j of
             word w in document id is held out when
             fmix64(fnv1a64(f"{id}\\x1f{w}\\x1f{j}")) is odd.

  timing     --input JSONL [--passes N] [--seed S] [--chunksize C]
             Seconds per pass over the whole corpus (the first pass excluded when
             N > 1), for the linuxdoc timing.

gensim's HdpModel is single-threaded Python/NumPy; the thread count of a run is set
with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS by the caller.
"""
import argparse
import json
import math
import sys
import time

M64 = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & M64
    return h


def fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def is_heldout(doc_id: str, word: str, j: int) -> bool:
    return fmix64(fnv1a64(f"{doc_id}\x1f{word}\x1f{j}".encode("utf-8"))) & 1 == 1


def read_docs(path):
    docs = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            counts = d.get("counts") or d.get("bow")
            docs.append((str(d.get("id", i)), counts, d.get("split")))
    return docs


def cmd_split(a):
    import re

    word = re.compile(r"[a-z]{2,}")
    raw = read_docs(a.input)
    docs = [(i, {w: n for w, n in c.items() if word.fullmatch(w)}, s) for i, c, s in raw]
    not_letters = sum(n for _, c, _ in raw for w, n in c.items() if not word.fullmatch(w))
    is_test = [i % a.test_every == a.test_every - 1 for i in range(len(docs))]
    train_vocab = {w for (_, c, _), t in zip(docs, is_test) if not t for w in c}
    dropped = 0
    with open(a.out, "w", encoding="utf-8") as out:
        for (doc_id, counts, _), test in zip(docs, is_test):
            if test:
                dropped += sum(n for w, n in counts.items() if w not in train_vocab)
                counts = {w: n for w, n in counts.items() if w in train_vocab}
            out.write(json.dumps({"id": doc_id, "counts": counts, "split": "test" if test else "train"}, sort_keys=True) + "\n")
    print(json.dumps({"documents": len(docs), "test": sum(is_test), "tokens_dropped_not_letters": not_letters,
                      "test_tokens_dropped_unseen_in_training": dropped}))


def train(a, train_docs):
    from gensim.corpora import Dictionary
    from gensim.models import HdpModel

    dictionary = Dictionary()
    dictionary.add_documents([[w for w in c] for _, c, _ in train_docs])
    corpus = [sorted((dictionary.token2id[w], n) for w, n in c.items()) for _, c, _ in train_docs]
    chunks_per_pass = math.ceil(len(corpus) / a.chunksize)
    t0 = time.perf_counter()
    model = HdpModel(corpus, dictionary, chunksize=a.chunksize, max_chunks=a.passes * chunks_per_pass,
                     T=a.T, K=a.K, random_state=a.seed)
    seconds = time.perf_counter() - t0
    return dictionary, model, seconds


def cmd_completion(a):
    import numpy as np

    docs = read_docs(a.input)
    train_docs = [d for d in docs if d[2] != "test"]
    test_docs = [d for d in docs if d[2] == "test"]
    dictionary, model, seconds = train(a, train_docs)
    _, beta = model.hdp_to_lda()
    total, held_tokens, obs_tokens, scored = 0.0, 0, 0, 0
    for doc_id, counts, _ in test_docs:
        observed, heldout = {}, {}
        for w, n in counts.items():
            h = sum(1 for j in range(n) if is_heldout(doc_id, w, j))
            if n > h:
                observed[w] = n - h
            if h:
                heldout[w] = h
        # Words unseen in training have no topic probability in gensim; topicd's
        # corpus has the whole vocabulary, so such tokens are counted separately.
        obs_bow = sorted((dictionary.token2id[w], n) for w, n in observed.items() if w in dictionary.token2id)
        held = [(dictionary.token2id[w], n) for w, n in heldout.items() if w in dictionary.token2id]
        if not obs_bow or not held:
            continue
        gamma = model.inference([obs_bow])[0]
        theta = gamma / gamma.sum()
        for t, n in held:
            total += n * math.log(float(np.dot(theta, beta[:, t])))
            held_tokens += n
        obs_tokens += sum(n for _, n in obs_bow)
        scored += 1
    per_token = total / held_tokens
    print(json.dumps({
        "system": "gensim", "version": __import__("gensim").__version__, "passes": a.passes, "T": a.T, "K": a.K,
        "train_documents": len(train_docs), "test_documents": scored,
        "observed_tokens": obs_tokens, "heldout_tokens": held_tokens,
        "per_token": per_token, "perplexity": math.exp(-per_token), "fit_seconds": seconds,
    }))


def cmd_timing(a):
    docs = read_docs(a.input)
    tokens = sum(sum(c.values()) for _, c, _ in docs)
    from gensim.corpora import Dictionary
    from gensim.models import HdpModel

    dictionary = Dictionary()
    dictionary.add_documents([[w for w in c] for _, c, _ in docs])
    corpus = [sorted((dictionary.token2id[w], n) for w, n in c.items()) for _, c, _ in docs]
    chunks_per_pass = math.ceil(len(corpus) / a.chunksize)
    times = []
    model = None
    for p in range(a.passes):
        t0 = time.perf_counter()
        if model is None:
            model = HdpModel(corpus, dictionary, chunksize=a.chunksize, max_chunks=chunks_per_pass, T=a.T, K=a.K, random_state=a.seed)
        else:
            model.update(corpus)
        times.append(time.perf_counter() - t0)
    steady = times[1:] if len(times) > 1 else times
    print(json.dumps({
        "system": "gensim", "version": __import__("gensim").__version__, "documents": len(docs),
        "tokens": tokens, "terms": len(dictionary), "passes": a.passes, "T": a.T, "K": a.K, "T": a.T, "K": a.K, "pass_seconds": times,
        "seconds_per_pass": sum(steady) / len(steady),
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("--input", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--test-every", type=int, default=5)
    for name in ("completion", "timing"):
        c = sub.add_parser(name)
        c.add_argument("--input", required=True)
        c.add_argument("--passes", type=int, default=10)
        c.add_argument("--seed", type=int, default=1)
        c.add_argument("--chunksize", type=int, default=256)
        c.add_argument("--T", type=int, default=150, help="gensim's top-level truncation (its default)")
        c.add_argument("--K", type=int, default=15, help="gensim's second-level truncation (its default)")
    a = ap.parse_args()
    {"split": cmd_split, "completion": cmd_completion, "timing": cmd_timing}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
