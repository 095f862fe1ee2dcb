#!/usr/bin/env bash
# LDA throughput: topicd vs tomotopy 0.14 on the same linuxdoc bag-of-words.
# K = 100, alpha = 0.5, beta = 0.01, 50 iterations, 1 and 2 threads.
# See bench/README.md.
#
# Usage:  bench/lda_vs_tomotopy.sh [--tomotopy-only]
# Env:    THREADS   thread counts to run      (default "1 2")
#         SEED      seed of the first repeat  (default 1)
#         REPEATS   runs per system and thread count, seeds SEED, SEED+1, ...
#                   (default 3; the systems alternate run by run)
#         ITERATIONS                          (default 50)
# The table reports, per thread count, the median tokens/s of each system over the
# repeats (the machine's speed drifts by ±10 % from run to run) and the mean
# log-likelihood per token (one chain's ends differ by ±0.01 from seed to seed), then
# every run on its own.
# Raw JSON lines go to bench/out/raw/, the table to bench/out/lda_vs_tomotopy.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."          # project root

TOMOTOPY_ONLY=0
case "${1:-}" in
  --tomotopy-only) TOMOTOPY_ONLY=1 ;;
  "") ;;
  *) echo "usage: $0 [--tomotopy-only]" >&2; exit 2 ;;
esac
THREADS=${THREADS:-"1 2"}
SEED=${SEED:-1}
REPEATS=${REPEATS:-3}
ITERATIONS=${ITERATIONS:-50}
BOW=bench/out/linuxdoc_bow.jsonl
RAW=bench/out/raw
mkdir -p "$RAW"

# 1. tomotopy 0.14.x
if ! python3 -c 'import sys, tomotopy; v = tuple(map(int, tomotopy.__version__.split(".")[:2])); sys.exit(v != (0, 14))' 2>/dev/null; then
  echo "== installing tomotopy 0.14" >&2
  python3 -m pip install --quiet 'tomotopy>=0.14,<0.15'
fi

# 2. corpus (tokenised once, shared by both systems)
if [ ! -s "$BOW" ]; then
  echo "== preparing $BOW" >&2
  python3 bench/prepare_linuxdoc.py
fi

# 3. topicd
if [ "$TOMOTOPY_ONLY" = 0 ]; then
  echo "== cargo build --release" >&2
  cargo build --release
fi

# 4. runs (one at a time: the machine has 2 cores).  Timings are only
#    meaningful on an otherwise idle machine: warn if something else is busy.
read -r LOAD1 _ < /proc/loadavg
if python3 -c "import sys; sys.exit(float('$LOAD1') < 0.5)"; then
  echo "WARNING: 1-min load average is $LOAD1 before the runs; other processes will skew the timings" >&2
fi
rm -f "$RAW"/topicd_t*.json "$RAW"/tomotopy_t*.json
for t in $THREADS; do
  for r in $(seq 0 $((REPEATS - 1))); do
    s=$((SEED + r))
    if [ "$TOMOTOPY_ONLY" = 0 ]; then
      echo "== topicd, $t thread(s), seed $s" >&2
      target/release/topicd fit --input "$BOW" --model lda --topics 100 --alpha 0.5 --beta 0.01 \
        --iterations "$ITERATIONS" --seed "$s" --threads "$t" --stopwords none --min-df 1 \
        > "$RAW/topicd_t${t}_s$s.json"
    fi
    echo "== tomotopy, $t thread(s), seed $s" >&2
    python3 bench/tomotopy_lda.py --input "$BOW" --threads "$t" --topics 100 --alpha 0.5 --beta 0.01 \
      --iterations "$ITERATIONS" --seed "$s" > "$RAW/tomotopy_t${t}_s$s.json"
  done
done

# 5. table
python3 - "$RAW" "$THREADS" "$TOMOTOPY_ONLY" "$SEED" "$REPEATS" <<'PY' | tee bench/out/lda_vs_tomotopy.md
import json, os, statistics, sys
raw, threads, tomotopy_only = sys.argv[1], sys.argv[2].split(), sys.argv[3] == "1"
seeds = [int(sys.argv[4]) + r for r in range(int(sys.argv[5]))]

def last_json(path):
    """Last stdout line that is a JSON object with tokens_per_second."""
    if not os.path.exists(path):
        return None
    rec = None
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "tokens_per_second" in d:
                rec = d
    return rec

def runs(system, t):
    out = [last_json(os.path.join(raw, "%s_t%s_s%d.json" % (system, t, s))) for s in seeds]
    return [r for r in out if r]

fmt = lambda x, f: "n/a" if x is None else f.format(x)
median = lambda xs: statistics.median(xs) if xs else None
mean = lambda xs: statistics.fmean(xs) if xs else None
print("Median over seeds %s of tokens/s, mean log-likelihood per token:" % ", ".join(map(str, seeds)))
print()
print("| threads | topicd tok/s | tomotopy tok/s | ratio | topicd tok/s/thread | "
      "tomotopy tok/s/thread | topicd ll/token | tomotopy ll/token | Δll |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
verdicts, rows, last = [], [], None
for t in threads:
    n = int(t)
    a = [] if tomotopy_only else runs("topicd", t)
    b = runs("tomotopy", t)
    last = (b or [None])[-1] or last
    at, bt = median([r["tokens_per_second"] for r in a]), median([r["tokens_per_second"] for r in b])
    al, bl = mean([r["loglik_per_token"] for r in a]), mean([r["loglik_per_token"] for r in b])
    ratio = at / bt if at and bt else None
    dll = al - bl if al is not None and bl is not None else None
    print("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        n, fmt(at, "{:,.0f}"), fmt(bt, "{:,.0f}"), fmt(ratio, "{:.2f}×"),
        fmt(at and at / n, "{:,.0f}"), fmt(bt and bt / n, "{:,.0f}"),
        fmt(al, "{:.4f}"), fmt(bl, "{:.4f}"), fmt(dll, "{:+.4f}")))
    for s, x, y in zip(seeds, a or [None] * len(b), b):
        rows.append((n, s, x, y))
    for name, rs in (("topicd", a), ("tomotopy", b)):
        for r in rs:
            if r.get("cpu_utilisation", 1) < 0.9:
                verdicts.append("WARNING: %s, %d thread(s), seed %s: CPU utilisation %.2f of %d core(s): "
                                "the run was starved, its timing is not valid" % (name, n, r["seed"], r["cpu_utilisation"], n))
    if a and b:
        if any(x.get("tokens") != y.get("tokens") for x in a for y in b):
            verdicts.append("WARNING: %d thread(s): token counts differ between the systems" % n)
        ok = ratio >= 1.5 and abs(dll) <= 0.02
        verdicts.append("%d thread(s): %s (median ratio %.2f, target >= 1.5; |Δ mean ll| %.4f, target <= 0.02)"
                        % (n, "PASS" if ok else "FAIL", ratio, abs(dll)))
print()
print("Every run (same seed for both systems):")
print()
print("| threads | seed | topicd tok/s | tomotopy tok/s | ratio | topicd ll/token | tomotopy ll/token | Δll |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, s, x, y in rows:
    xt, yt = x and x["tokens_per_second"], y["tokens_per_second"]
    xl, yl = x and x["loglik_per_token"], y["loglik_per_token"]
    print("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
        n, s, fmt(xt, "{:,.0f}"), fmt(yt, "{:,.0f}"), fmt(xt and xt / yt, "{:.2f}×"),
        fmt(xl, "{:.4f}"), fmt(yl, "{:.4f}"), fmt(x and xl - yl, "{:+.4f}")))
if last:
    print()
    print("corpus: %s documents, %s tokens; tomotopy %s (%s); K=100 alpha=0.5 beta=0.01, %s iterations"
          % (last["documents"], last["tokens"], last["version"], last.get("isa", "?"), last["iterations"]))
for v in verdicts:
    print(v)
PY
