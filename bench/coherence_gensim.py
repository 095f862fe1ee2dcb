#!/usr/bin/env python3
"""gensim's CoherenceModel on topicd's own tokens: the fixture and the benchmark side.

Input tokens are `GET /v1/corpora/{id}/tokens` NDJSON ({"id", "tokens": [...]} per
document), so gensim sees exactly the tokens topicd counts. gensim's accumulator is run
serially (processes=1): its parallel accumulator counts virtual documents differently
for documents shorter than the window.

  fixture  --tokens T --out F [--docs N]   pick fixed top-word lists, compute every
                                           measure, write the fixture JSON
  bench    --url U --model M --tokens T [--repeats R]
                                           per measure: topicd's /coherence and gensim on
                                           the same top words, values and median seconds
                                           per call, one JSON line each
"""
import argparse
import json
import statistics
import sys
import time
import urllib.request

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


def bench(args):
    texts = load_tokens(args.tokens)
    dictionary = Dictionary(texts)
    corpus = [dictionary.doc2bow(t) for t in texts]
    for measure, window in [("u_mass", None), ("c_npmi", "document"), ("c_npmi", 10), ("c_uci", 10), ("c_v", 110)]:
        query = f"measure={measure}&top_n={args.top_n}" + (f"&window={window}" if window else "")
        url = f"{args.url}/v1/models/{args.model}/coherence?{query}"
        topicd_times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url) as r:
                answer = json.load(r)
            topicd_times.append(time.perf_counter() - t0)
        topics = [t["words"] for t in answer["topics"]]
        gensim_times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            per_topic, mean = coherence(measure, topics, texts, dictionary, corpus, window)
            gensim_times.append(time.perf_counter() - t0)
        diff = max(abs(a - b) for a, b in zip(per_topic, (t["coherence"] for t in answer["topics"])))
        print(json.dumps({"measure": measure, "window": answer["window"], "topics": len(topics), "top_n": args.top_n,
                          "virtual_documents": answer["num_virtual_documents"], "topicd_mean": answer["mean"], "gensim_mean": mean,
                          "max_abs_diff": diff, "topicd_s": statistics.median(topicd_times), "gensim_s": statistics.median(gensim_times),
                          "gensim_version": gensim.__version__}), flush=True)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixture")
    f.add_argument("--tokens", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--docs", type=int, default=None)
    b = sub.add_parser("bench")
    b.add_argument("--url", required=True)
    b.add_argument("--model", required=True)
    b.add_argument("--tokens", required=True)
    b.add_argument("--top-n", type=int, default=10)
    b.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    {"fixture": fixture, "bench": bench}[args.cmd](args)


if __name__ == "__main__":
    main()
