#!/usr/bin/env bash
# LDA throughput: topicd vs tomotopy 0.14 on the same linuxdoc bag-of-words.
# K = 100, alpha = 0.5, beta = 0.01, 50 iterations, 1 and 2 threads.
# See bench/README.md.
#
# Usage:  bench/lda_vs_tomotopy.sh [--tomotopy-only]
# Env:    THREADS   thread counts to run      (default "1 2")
#         SEED      seed for both systems     (default 1)
#         ITERATIONS                          (default 50)
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
for t in $THREADS; do
  if [ "$TOMOTOPY_ONLY" = 0 ]; then
    echo "== topicd, $t thread(s)" >&2
    target/release/topicd fit --input "$BOW" --model lda --topics 100 --alpha 0.5 --beta 0.01 \
      --iterations "$ITERATIONS" --seed "$SEED" --threads "$t" --stopwords none --min-df 1 \
      > "$RAW/topicd_t$t.json"
  fi
  echo "== tomotopy, $t thread(s)" >&2
  python3 bench/tomotopy_lda.py --input "$BOW" --threads "$t" --topics 100 --alpha 0.5 --beta 0.01 \
    --iterations "$ITERATIONS" --seed "$SEED" > "$RAW/tomotopy_t$t.json"
done

# 5. table
python3 - "$RAW" "$THREADS" "$TOMOTOPY_ONLY" <<'PY' | tee bench/out/lda_vs_tomotopy.md
import json, os, sys
raw, threads, tomotopy_only = sys.argv[1], sys.argv[2].split(), sys.argv[3] == "1"

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

fmt = lambda x, f: "n/a" if x is None else f.format(x)
print("| threads | topicd tok/s | tomotopy tok/s | ratio | topicd tok/s/thread | "
      "tomotopy tok/s/thread | topicd ll/token | tomotopy ll/token | Δll |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
verdicts = []
for t in threads:
    n = int(t)
    a = None if tomotopy_only else last_json(os.path.join(raw, "topicd_t%s.json" % t))
    b = last_json(os.path.join(raw, "tomotopy_t%s.json" % t))
    at = a and a["tokens_per_second"]; bt = b and b["tokens_per_second"]
    al = a and a["loglik_per_token"]; bl = b and b["loglik_per_token"]
    ratio = at / bt if at and bt else None
    dll = al - bl if a and b else None
    print("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        n, fmt(at, "{:,.0f}"), fmt(bt, "{:,.0f}"), fmt(ratio, "{:.2f}×"),
        fmt(at and at / n, "{:,.0f}"), fmt(bt and bt / n, "{:,.0f}"),
        fmt(al, "{:.4f}"), fmt(bl, "{:.4f}"), fmt(dll, "{:+.4f}")))
    for name, r in (("topicd", a), ("tomotopy", b)):
        if r and r.get("cpu_utilisation", 1) < 0.9:
            verdicts.append("WARNING: %s, %d thread(s): CPU utilisation %.2f of %d core(s): "
                            "the run was starved, its timing is not valid" % (name, n, r["cpu_utilisation"], n))
    if a and b:
        if a.get("tokens") != b.get("tokens"):
            verdicts.append("WARNING: %d thread(s): token counts differ (topicd %s, tomotopy %s)"
                            % (n, a.get("tokens"), b.get("tokens")))
        ok = ratio >= 1.5 and abs(dll) <= 0.02
        verdicts.append("%d thread(s): %s (ratio %.2f, target >= 1.5; |Δll| %.4f, target <= 0.02)"
                        % (n, "PASS" if ok else "FAIL", ratio, abs(dll)))
if b:
    print()
    print("corpus: %s documents, %s tokens; tomotopy %s (%s); K=100 alpha=0.5 beta=0.01, %s iterations"
          % (b["documents"], b["tokens"], b["version"], b.get("isa", "?"), b["iterations"]))
for v in verdicts:
    print(v)
PY
