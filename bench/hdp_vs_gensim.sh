#!/usr/bin/env bash
# HDP topic model: topicd (memoized VI) vs bnpy 0.1.7 (memoized VI, the authors of
# paper 002) and gensim 4.4 HdpModel (online VI).
#
#  1. Held-out quality on reuters395 (every 5th document is a test document):
#     per-token log-likelihood by document completion, the same token split on
#     every side (src/models/completion.rs, bench/gensim_hdp.py, bench/bnpy_hdp.py).
#     topicd and bnpy run at two prior sets, topicd's defaults (alpha 0.5, gamma 10,
#     lambda 0.1) and gensim's (alpha 1, gamma 1, topic-word Dirichlet 0.01); topicd
#     without moves, at its defaults (a delete proposed every pass: K is inferred),
#     with merges too and with births as well (merge_every=1, birth_every=2); bnpy
#     without moves
#     and with births, merges, deletes and shuffles (minutes a fit); gensim at its
#     own priors.
#  2. Seconds per pass over linuxdoc (bench/out/linuxdoc_bow.jsonl, made by
#     bench/prepare_linuxdoc.py) at 1 and 2 threads, topicd vs gensim.
#
# Usage:  bench/hdp_vs_gensim.sh [quality|timing|all|table]   (default all; table: only
#         the tables from the raw results already in bench/out/raw)
# Env:    SEEDS ("1 2 3", quality runs), SEED (1, timing), PASSES_QUALITY (50 passes,
#         bnpy's laps too), PASSES_TIMING (3), THREADS ("1 2"), TOPICS (truncation on
#         every side, 50), BATCHES (topicd's and bnpy's memoized batches, 1),
#         PRIOR_SETS ("topicd gensim"), BNPY_MOVES (1: also bnpy with moves),
#         REUSE_BNPY (1: keep bnpy results already in bench/out/raw),
#         BNPY_VENV (bench/out/bnpyenv: built by ../shared/anchors/bnpy_setup.sh when missing).
# Raw JSON lines go to bench/out/raw/, the table to bench/out/hdp_vs_gensim.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."          # project root

WHAT=${1:-all}
SEED=${SEED:-1}
SEEDS=${SEEDS:-"1 2 3"}
PRIORS="--param alpha=1 --param gamma=1 --param lambda=0.01"   # gensim's, for the timing runs
PRIOR_SETS=${PRIOR_SETS:-"topicd gensim"}
BNPY_MOVES=${BNPY_MOVES:-1}
REUSE_BNPY=${REUSE_BNPY:-1}
BNPY_VENV=${BNPY_VENV:-bench/out/bnpyenv}
BATCHES=${BATCHES:-1}
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

priors_of() {   # topicd params, then bnpy flags, of a prior set
  case $1 in
    topicd) echo "--param alpha=0.5 --param gamma=10 --param lambda=0.1|--alpha 0.5 --gamma 10 --lam 0.1" ;;
    gensim) echo "--param alpha=1 --param gamma=1 --param lambda=0.01|--alpha 1 --gamma 1 --lam 0.01" ;;
    *) echo "unknown prior set $1" >&2; exit 2 ;;
  esac
}

if [ "$WHAT" = quality ] || [ "$WHAT" = all ]; then
  if [ ! -x "$BNPY_VENV/bin/python" ]; then
    echo "== building bnpy 0.1.7 in $BNPY_VENV (../shared/anchors/bnpy_setup.sh)" >&2
    bash ../shared/anchors/bnpy_setup.sh "$PWD/$BNPY_VENV" >&2
  fi
  SPLIT=bench/out/reuters395_split.jsonl
  python3 bench/gensim_hdp.py split --input ../shared/data/reuters395_bow.jsonl --out "$SPLIT" > "$RAW/hdp_split.json"
  for seed in $SEEDS; do
    for set in $PRIOR_SETS; do
      IFS='|' read -r TP BP <<< "$(priors_of "$set")"
      # topicd: no moves, its defaults (a delete proposed every pass), merges too, births too.
      for moves in off deletes all births; do
        case $moves in
          off) MP="--param merge_every=0 --param delete_every=0" ;;
          deletes) MP="" ;;
          all) MP="--param merge_every=1" ;;
          births) MP="--param merge_every=1 --param birth_every=2" ;;
        esac
        echo "== topicd hdp on reuters395 ($set priors, moves $moves, seed $seed)" >&2
        target/release/topicd fit --input "$SPLIT" --model hdp --topics "$TOPICS" --seed "$seed" $TP $MP \
          --stopwords none --min-df 1 --threads 1 --param passes="$PASSES_QUALITY" --param batches="$BATCHES" \
          > "$RAW/hdp_quality_topicd_${set}_moves${moves}_s$seed.json"
      done
      # bnpy: no moves, and births, merges, deletes and shuffles (its full memoVB).
      for moves in off all; do
        [ "$moves" = all ] && [ "$BNPY_MOVES" != 1 ] && continue
        OUT="$RAW/hdp_quality_bnpy_${set}_moves${moves}_s$seed.json"
        if [ "$REUSE_BNPY" = 1 ] && grep -q '"per_token"' "$OUT" 2>/dev/null; then
          echo "== bnpy: keeping $OUT" >&2
          continue
        fi
        BM="none"; [ "$moves" = all ] && BM="birth,merge,delete,shuffle"
        echo "== bnpy HDPTopicModel on reuters395 ($set priors, moves $BM, seed $seed)" >&2
        OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
          "$BNPY_VENV/bin/python" bench/bnpy_hdp.py completion --input "$SPLIT" --laps "$PASSES_QUALITY" --seed "$seed" \
          --K "$TOPICS" --batches "$BATCHES" $BP --moves "$BM" > "$OUT" 2> "${OUT%.json}.log"
      done
    done
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
      --stopwords none --min-df 1 --threads "$t" --param passes="$PASSES_TIMING" --param batches="$BATCHES" \
      > "$RAW/hdp_timing_topicd_t$t.json"
    echo "== gensim HdpModel on linuxdoc, $t thread(s) for BLAS" >&2
    OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t \
      python3 bench/gensim_hdp.py timing --input "$BOW" --passes "$PASSES_TIMING" --seed "$SEED" --T "$TOPICS" \
      > "$RAW/hdp_timing_gensim_t$t.json"
  done
fi

python3 - "$RAW" "$THREADS" "$SEEDS" "$PRIOR_SETS" <<'PY' | tee bench/out/hdp_vs_gensim.md
import json, os, statistics, sys
raw, threads, seeds, sets = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()

def load(name):
    path = os.path.join(raw, name)
    if not os.path.exists(path):
        return None
    lines = [l for l in open(path, encoding="utf-8") if l.strip().startswith("{")]
    return json.loads(lines[-1]) if lines else None

MODES = {"off": "none", "deletes": "its defaults (deletes every pass)", "all": "merges and deletes", "births": "births, merges and deletes"}
BNPY_MODES = {"off": "none", "all": "births, merges, deletes and shuffles"}

def topicd_row(d):
    g, h = d["diagnostics"], d["diagnostics"]["heldout"]
    return d["topics"], f"{g['merges_accepted']} merges, {g['deletes_accepted']} deletes, {g.get('births_accepted', 0)} births", h["per_token"], d["fit_seconds"], h

def bnpy_row(d):
    acc = d.get("accepted", {})
    moves = "none" if d["moves"] == "none" else ", ".join(f"{acc.get(m, 0)} {m}s" for m in ("merge", "delete", "birth") if m in acc)
    return d["topics"], moves, d["per_token"], d["fit_seconds"], d

def gensim_row(d):
    return f"T={d['T']}", "online VI", d["per_token"], d["fit_seconds"], d

rows, groups = [], {}
for s in seeds:
    for st in sets:
        for system, f, modes in (("topicd", topicd_row, ("off", "deletes", "all", "births")), ("bnpy", bnpy_row, ("off", "all"))):
            for mv in modes:
                d = load(f"hdp_quality_{system}_{st}_moves{mv}_s{s}.json")
                if d:
                    rows.append((f"{system}, {st} priors, moves: {(BNPY_MODES if system == 'bnpy' else MODES)[mv]}", s) + f(d))
    d = load(f"hdp_quality_gensim_s{s}.json")
    if d:
        rows.append(("gensim HdpModel, gensim priors", s) + gensim_row(d))
if rows:
    print("| reuters395, document completion | seed | topics | moves accepted | log-lik / token | fit s |")
    print("|---|---|---|---|---|---|")
    for name, s, k, moves, ll, secs, _ in rows:
        groups.setdefault(name, []).append((ll, secs))
        print(f"| {name} | {s} | {k} | {moves} | {ll:.4f} | {secs:.1f} |")
    print()
    print("| mean over seeds | seeds | log-lik / token (mean ± sd) | fit s (mean) |")
    print("|---|---|---|---|")
    for name, v in groups.items():
        lls = [x for x, _ in v]
        sd = statistics.stdev(lls) if len(lls) > 1 else float("nan")
        print(f"| {name} | {len(v)} | {statistics.mean(lls):.4f} ± {sd:.4f} | {statistics.mean([t for _, t in v]):.1f} |")
    h = rows[0][6]
    print(f"\n{h.get('documents', h.get('test_documents'))} test documents, {h['observed_tokens']} observed and {h['heldout_tokens']} held-out tokens.")
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
