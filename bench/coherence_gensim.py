#!/usr/bin/env python3
"""gensim's CoherenceModel on topicd's own tokens: the fixture and the benchmark side.

Input tokens are `GET /v1/corpora/{id}/tokens` NDJSON ({"id", "tokens": [...]} per
document), so gensim sees exactly the tokens topicd counts. gensim's accumulator is run
serially (processes=1): its parallel accumulator counts virtual documents differently
for documents shorter than the window.

  fixture  --tokens T --out F [--docs N]   pick fixed top-word lists, compute every
                                           measure, write the fixture JSON
  measure  --tokens T --topics J --measure M --window W [--repeats R]
                                           values and seconds per call, one JSON line
"""
import argparse
import json
import sys
import time

import gensim
from gensim.corpora import Dictionary
from gensim.models.coherencemodel import CoherenceModel


def load_tokens(path, limit=None):
    docs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                docs.append(json.loads(line)["tokens"])
                if limit and len(docs) >= limit:
                    break
    return docs


def gensim_window(window, texts):
    """topicd's window -> gensim's window_size: 'document' = the longest document."""
    if window in (None, "document"):
        return max(len(t) for t in texts)
    return int(window)


def coherence(measure, topics, texts, dictionary, corpus, window):
    kwargs = dict(topics=topics, dictionary=dictionary, coherence=measure, processes=1, topn=max(len(t) for t in topics))
    if measure == "u_mass":
        kwargs["corpus"] = corpus
    else:
        kwargs["texts"] = texts
        kwargs["window_size"] = gensim_window(window, texts)
    cm = CoherenceModel(**kwargs)
    per_topic = [float(x) for x in cm.get_coherence_per_topic()]
    return per_topic, float(cm.aggregate_measures(per_topic))


def fixture(args):
    texts = load_tokens(args.tokens, args.docs)
    dictionary = Dictionary(texts)
    corpus = [dictionary.doc2bow(t) for t in texts]
    by_freq = sorted(dictionary.token2id, key=lambda w: (-dictionary.cfs[dictionary.token2id[w]], w))
    # Fixed lists: frequent words, mid-frequency words, a stride through the ranks, and
    # rare words (document frequency 2 or 3), so that co-occurrence runs from common to
    # absent.
    rare = [w for w in by_freq if dictionary.dfs[dictionary.token2id[w]] in (2, 3)]
    topics = [by_freq[0:10], by_freq[10:20], by_freq[50:60], by_freq[5:200:20], rare[0:40:4], by_freq[0:3]]
    cases = []
    for measure, window in [("u_mass", None), ("c_npmi", 10), ("c_npmi", "document"), ("c_npmi", 3),
                            ("c_uci", 10), ("c_v", 110), ("c_v", 5), ("c_v", "document")]:
        per_topic, mean = coherence(measure, topics, texts, dictionary, corpus, window)
        cases.append({"measure": measure, "window": window, "gensim_window_size": None if measure == "u_mass" else gensim_window(window, texts),
                      "per_topic": per_topic, "coherence": mean})
    out = {
        "what": "gensim CoherenceModel(processes=1) values for fixed top-word lists on topicd's tokens "
                "of the first documents of tests/data/appstream_300.jsonl (see bench/make_coherence_fixture.sh)",
        "gensim_version": gensim.__version__,
        "window_note": "window 'document' is gensim's sliding window with window_size = the longest document",
        "topics": topics,
        "cases": cases,
        "documents": texts,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


def measure(args):
    texts = load_tokens(args.tokens)
    topics = json.load(open(args.topics, encoding="utf-8"))
    t0 = time.perf_counter()
    dictionary = Dictionary(texts)
    corpus = [dictionary.doc2bow(t) for t in texts] if args.measure == "u_mass" else None
    prep = time.perf_counter() - t0
    window = None if args.window in (None, "", "document") else int(args.window)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        per_topic, mean = coherence(args.measure, topics, texts, dictionary, corpus, window if window else "document")
        times.append(time.perf_counter() - t0)
    json.dump({"measure": args.measure, "window": args.window or "document", "per_topic": per_topic, "coherence": mean,
               "seconds_per_call": min(times), "dictionary_seconds": prep, "gensim_version": gensim.__version__}, sys.stdout)
    print()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixture")
    f.add_argument("--tokens", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--docs", type=int, default=None)
    m = sub.add_parser("measure")
    m.add_argument("--tokens", required=True)
    m.add_argument("--topics", required=True)
    m.add_argument("--measure", required=True)
    m.add_argument("--window", default=None)
    m.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    {"fixture": fixture, "measure": measure}[args.cmd](args)


if __name__ == "__main__":
    main()
