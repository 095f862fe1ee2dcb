#!/usr/bin/env python3
"""Prepare the `linuxdoc` bag-of-words corpus for the LDA throughput benchmark.

Step 1 (skipped when bench/out/linuxdoc.jsonl already exists): run the shared
builder

    python3 ../shared/data/build_throughput.py --sources linuxdoc \
        --out bench/out/linuxdoc.jsonl

(paths relative to the project root).  The builder fetches Debian's
`linux-doc-6.1` package with `apt-get download`, so the apt lists must exist;
if the first attempt fails this script runs `apt-get update` once and retries.
Downloaded .debs are kept in bench/out/debs/ and reused on later runs.

Step 2: tokenise every document ONCE, so that topicd and tomotopy see exactly
the same tokens, and write bench/out/linuxdoc_bow.jsonl, one JSON object per
line: {"id": str, "counts": {"word": n, ...}} (words sorted).

Tokenisation rules (deliberately simple and fully documented here):
  1. lowercase the whole text;
  2. tokens are maximal runs matching [a-z][a-z]+ , i.e. ASCII letters only,
     at least 2 long (digits, punctuation, underscores split tokens: so
     "kmalloc_array" gives "kmalloc" and "array", "x86" gives nothing);
  3. drop the English stop words in STOPWORDS below (a small, standard list);
  4. drop terms that appear in fewer than MIN_DF = 5 documents (document
     frequency is counted after step 3, over all documents);
  5. drop documents left empty.
No stemming, no maximum document frequency, no length cap.

Prints the number of documents, the vocabulary size and the total tokens, and
writes the same figures to bench/out/linuxdoc_bow_stats.json.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
OUT = os.path.join(BENCH, "out")
BUILDER = os.path.join(ROOT, "..", "shared", "data", "build_throughput.py")

TOKEN_RE = re.compile(r"[a-z][a-z]+")
MIN_DF = 5
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just me more most my myself no
nor not now of off on once only or other our ours ourselves out over own same
she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself
yourselves also may must shall might us etc via
""".split())


def build_raw(raw_path):
    """Run the shared builder into a temp file, rename on success."""
    tmp = raw_path + ".tmp"
    cmd = [sys.executable, BUILDER, "--sources", "linuxdoc", "--out", tmp,
           "--stats", os.path.join(OUT, "linuxdoc_stats.json"),
           "--debs", os.path.join(OUT, "debs")]
    r = subprocess.run(cmd, cwd=ROOT)
    if r.returncode != 0:
        print("builder failed; running apt-get update once and retrying", file=sys.stderr)
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(cmd, cwd=ROOT, check=True)
    os.replace(tmp, raw_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", default=os.path.join(OUT, "linuxdoc.jsonl"))
    ap.add_argument("--out", default=os.path.join(OUT, "linuxdoc_bow.jsonl"))
    ap.add_argument("--min-df", type=int, default=MIN_DF)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)

    t0 = time.time()
    if os.path.exists(args.raw):
        print("reusing", os.path.relpath(args.raw, ROOT))
    else:
        build_raw(args.raw)
    t1 = time.time()

    docs = []                                   # (id, Counter) after stop words
    df = collections.Counter()
    with open(args.raw, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            c = collections.Counter(w for w in TOKEN_RE.findall(d["text"].lower())
                                    if w not in STOPWORDS)
            docs.append((d["id"], c))
            df.update(c.keys())
    keep = {w for w, n in df.items() if n >= args.min_df}

    n_docs = n_tok = 0
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        for did, c in docs:
            counts = {w: c[w] for w in sorted(c) if w in keep}
            if not counts:
                continue
            n_docs += 1
            n_tok += sum(counts.values())
            out.write(json.dumps({"id": did, "counts": counts}, ensure_ascii=False) + "\n")
    os.replace(tmp, args.out)
    t2 = time.time()

    stats = {"documents": n_docs, "vocabulary": len(keep), "tokens": n_tok,
             "raw_documents": len(docs), "min_df": args.min_df,
             "build_seconds": round(t1 - t0, 1), "tokenise_seconds": round(t2 - t1, 1)}
    with open(os.path.join(OUT, "linuxdoc_bow_stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    print("documents %d  vocabulary %d  tokens %d  (build %.1fs, tokenise %.1fs)"
          % (n_docs, len(keep), n_tok, t1 - t0, t2 - t1))
    print("wrote", os.path.relpath(args.out, ROOT))


if __name__ == "__main__":
    main()
