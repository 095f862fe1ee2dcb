#!/usr/bin/env bash
# HDP topic model: topicd (memoized VI) vs gensim 4.4 HdpModel (online VI).
#
#  1. Held-out quality on reuters395 (every 5th document is a test document):
#     per-token log-likelihood by document completion, the same token split on
#     both sides (src/models/completion.rs, bench/gensim_hdp.py).
#  2. Seconds per pass over linuxdoc (bench/out/linuxdoc_bow.jsonl, made by
#     bench/prepare_linuxdoc.py) at 1 and 2 threads.
#
# Usage:  bench/hdp_vs_gensim.sh [quality|timing|all]      (default all)
# Env:    SEEDS ("1 2 3", quality runs), SEED (1, timing), PASSES_QUALITY (50),
#         PASSES_TIMING (3), THREADS ("1 2"), TOPICS (truncation on both sides, 50),
#         BATCHES (topicd's memoized batches).
# Priors are gensim's defaults on both sides: alpha = 1, gamma = 1, topic-word
# Dirichlet 0.01 (gensim's eta, topicd's lambda).
# Raw JSON lines go to bench/out/raw/, the table to bench/out/hdp_vs_gensim.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."          # project root

WHAT=${1:-all}
SEED=${SEED:-1}
SEEDS=${SEEDS:-"1 2 3"}
PRIORS="--param alpha=1 --param gamma=1 --param lambda=0.01"
PASSES_QUALITY=${PASSES_QUALITY:-50}
PASSES_TIMING=${PASSES_TIMING:-3}
THREADS=${THREADS:-"1 2"}
TOPICS=${TOPICS:-50}
RAW=bench/out/raw
mkdir -p "$RAW"

python3 -c 'import gensim' 2>/dev/null || python3 -m pip install --quiet 'gensim>=4.4,<4.5'
cargo build --release --locked >&2

read -r LOAD1 _ < /proc/loadavg
if python3 -c "import sys; sys.exit(float('$LOAD1') < 0.5)"; then
  echo "WARNING: 1-min load average is $LOAD1; other processes will skew the timings" >&2
fi

if [ "$WHAT" = quality ] || [ "$WHAT" = all ]; then
  SPLIT=bench/out/reuters395_split.jsonl
  python3 bench/gensim_hdp.py split --input ../shared/data/reuters395_bow.jsonl --out "$SPLIT" > "$RAW/hdp_split.json"
  for seed in $SEEDS; do
    echo "== topicd hdp on reuters395 ($PASSES_QUALITY passes, seed $seed)" >&2
    target/release/topicd fit --input "$SPLIT" --model hdp --topics "$TOPICS" --seed "$seed" $PRIORS \
      --stopwords none --min-df 1 --threads 1 --param passes="$PASSES_QUALITY" ${BATCHES:+--param batches="$BATCHES"} \
      > "$RAW/hdp_quality_topicd_s$seed.json"
    echo "== gensim HdpModel on reuters395 ($PASSES_QUALITY passes, seed $seed)" >&2
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
      python3 bench/gensim_hdp.py completion --input "$SPLIT" --passes "$PASSES_QUALITY" --seed "$seed" --T "$TOPICS" \
      > "$RAW/hdp_quality_gensim_s$seed.json"
  done
fi

if [ "$WHAT" = timing ] || [ "$WHAT" = all ]; then
  BOW=bench/out/linuxdoc_bow.jsonl
  [ -s "$BOW" ] || python3 bench/prepare_linuxdoc.py
  for t in $THREADS; do
    echo "== topicd hdp on linuxdoc, $t thread(s)" >&2
    target/release/topicd fit --input "$BOW" --model hdp --topics "$TOPICS" --seed "$SEED" $PRIORS \
      --stopwords none --min-df 1 --threads "$t" --param passes="$PASSES_TIMING" ${BATCHES:+--param batches="$BATCHES"} \
      > "$RAW/hdp_timing_topicd_t$t.json"
    echo "== gensim HdpModel on linuxdoc, $t thread(s) for BLAS" >&2
    OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t \
      python3 bench/gensim_hdp.py timing --input "$BOW" --passes "$PASSES_TIMING" --seed "$SEED" --T "$TOPICS" \
      > "$RAW/hdp_timing_gensim_t$t.json"
  done
fi

python3 - "$RAW" "$THREADS" "$SEEDS" <<'PY' | tee bench/out/hdp_vs_gensim.md
import json, os, statistics, sys
raw, threads, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()

def load(name):
    path = os.path.join(raw, name)
    if not os.path.exists(path):
        return None
    lines = [l for l in open(path, encoding="utf-8") if l.strip().startswith("{")]
    return json.loads(lines[-1]) if lines else None

quality = [(s, load(f"hdp_quality_topicd_s{s}.json"), load(f"hdp_quality_gensim_s{s}.json")) for s in seeds]
quality = [(s, t, g) for s, t, g in quality if t and g]
if quality:
    print("| reuters395, document completion | seed | topics | test docs | held-out tokens | log-lik / token | fit s |")
    print("|---|---|---|---|---|---|---|")
    for s, t, g in quality:
        h = t["diagnostics"]["heldout"]
        print(f"| topicd hdp | {s} | {t['topics']} | {h['documents']} | {h['heldout_tokens']} | {h['per_token']:.4f} | {t['fit_seconds']:.1f} |")
        print(f"| gensim HdpModel | {s} | T={g['T']} | {g['test_documents']} | {g['heldout_tokens']} | {g['per_token']:.4f} | {g['fit_seconds']:.1f} |")
    for name, vals in (("topicd", [t["diagnostics"]["heldout"]["per_token"] for _, t, _ in quality]),
                       ("gensim", [g["per_token"] for _, _, g in quality])):
        sd = statistics.stdev(vals) if len(vals) > 1 else float("nan")
        print(f"| {name} mean over seeds | | | | | {statistics.mean(vals):.4f} ± {sd:.4f} (sd) | |")
    print()
rows = []
for th in threads:
    t, g = load(f"hdp_timing_topicd_t{th}.json"), load(f"hdp_timing_gensim_t{th}.json")
    if t and g:
        rows.append((th, t["seconds_per_iteration"], g["seconds_per_pass"], t["topics"]))
if rows:
    print("| linuxdoc, s per pass | threads | topicd | gensim | gensim / topicd | topicd active K |")
    print("|---|---|---|---|---|---|")
    for th, ts, gs, k in rows:
        print(f"| | {th} | {ts:.2f} | {gs:.2f} | {gs / ts:.2f}x | {k} |")
PY
