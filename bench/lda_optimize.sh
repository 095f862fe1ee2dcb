#!/usr/bin/env bash
# LDA with hyperparameter optimisation: topicd (optimize_interval = 10) vs tomotopy 0.14
# (optim_interval = 10, its default burn_in = 0) on the same linuxdoc training tokens;
# both models' held-out log-likelihood by the same Chib-style estimator on the same
# held-out documents.  K = 100, alpha = 0.5 to start, beta = 0.01, 50 iterations.
# See bench/README.md ("LDA hyperparameter optimisation").
#
# Usage:  bench/lda_optimize.sh
# Env:    THREADS     thread counts to run      (default "2")
#         SEED        seed of the first repeat  (default 1)
#         REPEATS     runs per system and thread count, seeds SEED, SEED+1, ...
#                     (default 3; the systems alternate run by run)
#         ITERATIONS                            (default 50)
#         HELDOUT     1: score held-out documents (default); 0: throughput and
#                     log-likelihood only (topicd fits the training file, no scoring)
# Raw JSON lines go to bench/out/raw/, the table to bench/out/lda_optimize.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."          # project root

THREADS=${THREADS:-"2"}
SEED=${SEED:-1}
REPEATS=${REPEATS:-3}
ITERATIONS=${ITERATIONS:-50}
HELDOUT=${HELDOUT:-1}
RAW=bench/out/raw
mkdir -p "$RAW"

# 1. tomotopy 0.14.x
if ! python3 -c 'import sys, tomotopy; v = tuple(map(int, tomotopy.__version__.split(".")[:2])); sys.exit(v != (0, 14))' 2>/dev/null; then
  echo "== installing tomotopy 0.14" >&2
  python3 -m pip install --quiet 'tomotopy>=0.14,<0.15'
fi

# 2. corpus: tokenised once, then split into training and held-out documents
if [ ! -s bench/out/linuxdoc_bow.jsonl ]; then
  echo "== preparing bench/out/linuxdoc_bow.jsonl" >&2
  python3 bench/prepare_linuxdoc.py
fi
python3 bench/split_linuxdoc.py > bench/out/linuxdoc_split_stats.json

# 3. topicd
echo "== cargo build --release" >&2
cargo build --release

read -r LOAD1 _ < /proc/loadavg
if python3 -c "import sys; sys.exit(float('$LOAD1') < 0.5)"; then
  echo "WARNING: 1-min load average is $LOAD1 before the runs; other processes will skew the timings" >&2
fi
rm -f "$RAW"/opt_*.json
for t in $THREADS; do
  for r in $(seq 0 $((REPEATS - 1))); do
    s=$((SEED + r))
    # topicd trains on the "train" documents and scores the "test" ones at the end of
    # the fit; --burn-in (ITERATIONS - 1) keeps only the last sweep, so its phi is the
    # final state's, as tomotopy's get_topic_word_dist.
    echo "== topicd, $t thread(s), seed $s (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    input=bench/out/linuxdoc_split.jsonl
    [ "$HELDOUT" = 1 ] || input=bench/out/linuxdoc_train.jsonl
    target/release/topicd fit --input "$input" --model lda --topics 100 --alpha 0.5 --beta 0.01 \
      --iterations "$ITERATIONS" --burn-in $((ITERATIONS - 1)) --seed "$s" --threads "$t" --stopwords none --min-df 1 \
      --param optimize_interval=10 > "$RAW/opt_topicd_t${t}_s$s.json"
    echo "== tomotopy, $t thread(s), seed $s (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    save=()
    [ "$HELDOUT" = 1 ] && save=(--save-model "$RAW/opt_tomotopy_model_t${t}_s$s.json")
    python3 bench/tomotopy_lda.py --input bench/out/linuxdoc_train.jsonl --threads "$t" --topics 100 --alpha 0.5 --beta 0.01 \
      --iterations "$ITERATIONS" --seed "$s" --optim-interval 10 --optim-burn-in 0 "${save[@]}" \
      > "$RAW/opt_tomotopy_t${t}_s$s.json"
    if [ "$HELDOUT" = 1 ]; then
      echo "== held-out score of tomotopy's model, seed $s" >&2
      target/release/topicd score-lda --model "$RAW/opt_tomotopy_model_t${t}_s$s.json" --input bench/out/linuxdoc_heldout.jsonl \
        --seed "$s" --threads "$t" > "$RAW/opt_tomotopy_heldout_t${t}_s$s.json"
    fi
    rm -f "$RAW/opt_tomotopy_model_t${t}_s$s.json"
  done
done

# 4. table
python3 - "$RAW" "$THREADS" "$SEED" "$REPEATS" "$ITERATIONS" "$HELDOUT" <<'PY' | tee bench/out/lda_optimize.md
import json, math, os, statistics, sys
raw, threads = sys.argv[1], sys.argv[2].split()
seeds = [int(sys.argv[3]) + r for r in range(int(sys.argv[4]))]
iterations, heldout = int(sys.argv[5]), sys.argv[6] == "1"
split = json.load(open("bench/out/linuxdoc_split_stats.json"))

def last_json(path):
    rec = None
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                pass
    return rec

def run(t, s):
    """One seed's figures for both systems."""
    a = last_json(os.path.join(raw, "opt_topicd_t%s_s%d.json" % (t, s)))
    b = last_json(os.path.join(raw, "opt_tomotopy_t%s_s%d.json" % (t, s)))
    g = a["diagnostics"]
    nan = {"tokens": 0, "log_likelihood_per_token": float("nan")}
    bh = last_json(os.path.join(raw, "opt_tomotopy_heldout_t%s_s%d.json" % (t, s))) if heldout else nan
    h = g["heldout"] if heldout else nan
    if h["tokens"] != bh["tokens"] or g["tokens"] != b["tokens"]:
        raise SystemExit("token counts differ between the systems: %s" % [(g["tokens"], b["tokens"]), (h["tokens"], bh["tokens"])])
    return {
        # topicd's corpus also holds the held-out documents: its throughput is the
        # training tokens over the seconds per sweep.
        "a_tps": g["tokens"] / a["seconds_per_iteration"], "b_tps": b["tokens_per_second"],
        "a_ll": a["loglik_per_token"], "b_ll": b["loglik_per_token"],
        "a_ho": h["log_likelihood_per_token"], "b_ho": bh["log_likelihood_per_token"],
        "a_alpha": g["fitted_alpha_sum"], "b_alpha": b["alpha_sum"], "b_util": b["cpu_utilisation"], "seed": s,
    }

def mean_se(xs):
    if any(x != x for x in xs):
        return float("nan"), float("nan")
    m = statistics.fmean(xs)
    return m, (statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan"))

print("K = 100, alpha = 0.5 at the start, beta = 0.01, %d iterations, hyperparameters re-estimated every 10 sweeps" % iterations)
print("(topicd optimize_interval = 10; tomotopy optim_interval = 10, burn_in = 0). Training: %d documents, %d tokens;"
      % (split["train_documents"], split["train_tokens"]))
print("held out: %d documents, %d tokens, scored by topicd's Chib-style estimator (burn-in 100, S = 1000) for both models."
      % (split["heldout_documents"], split["heldout_tokens"]))
print("Seeds %s; medians of tokens/s, means (± standard error over seeds) of the rest." % ", ".join(map(str, seeds)))
print()
print("| threads | topicd tok/s | tomotopy tok/s | ratio | topicd ll/token | tomotopy ll/token | Δll | topicd held-out/token | tomotopy held-out/token | Δ held-out | topicd α₀ | tomotopy α₀ |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
verdicts, rows = [], []
for t in threads:
    rs = [run(t, s) for s in seeds]
    rows += [(t, s, r) for s, r in zip(seeds, rs)]
    at, bt = statistics.median(r["a_tps"] for r in rs), statistics.median(r["b_tps"] for r in rs)
    al, bl = statistics.fmean(r["a_ll"] for r in rs), statistics.fmean(r["b_ll"] for r in rs)
    dll, dll_se = mean_se([r["a_ll"] - r["b_ll"] for r in rs])
    ah, bh = statistics.fmean(r["a_ho"] for r in rs), statistics.fmean(r["b_ho"] for r in rs)
    dho, dho_se = mean_se([r["a_ho"] - r["b_ho"] for r in rs])
    print("| %s | %.2f M | %.2f M | %.2f× | %.4f | %.4f | %+.4f ± %.4f | %.4f | %.4f | %+.4f ± %.4f | %.2f | %.2f |" % (
        t, at / 1e6, bt / 1e6, at / bt, al, bl, dll, dll_se, ah, bh, dho, dho_se,
        statistics.fmean(r["a_alpha"] for r in rs), statistics.fmean(r["b_alpha"] for r in rs)))
    verdict = "%s thread(s): log-likelihood %s (|Δ mean| %.4f, target <= 0.02)" % (t, "PASS" if abs(dll) <= 0.02 else "FAIL", abs(dll))
    if heldout:
        verdict += "; held-out %s (Δ mean %+.4f, SE %.4f: target 'no worse', taken as Δ >= -2 SE)" % (
            "PASS" if dho >= -2 * (dho_se if dho_se == dho_se else 0) else "FAIL", dho, dho_se)
    verdicts.append(verdict)
    for r in rs:
        if r["b_util"] < 0.9:
            verdicts.append("WARNING: tomotopy, %s thread(s), seed %d: CPU utilisation %.2f: its timing is not valid" % (t, r["seed"], r["b_util"]))
print()
print("Every run (same seed for both systems):")
print()
print("| threads | seed | topicd tok/s | tomotopy tok/s | ratio | topicd ll/token | tomotopy ll/token | Δll | topicd held-out | tomotopy held-out | Δ held-out |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for t, s, r in rows:
    print("| %s | %d | %.2f M | %.2f M | %.2f× | %.4f | %.4f | %+.4f | %.4f | %.4f | %+.4f |" % (
        t, s, r["a_tps"] / 1e6, r["b_tps"] / 1e6, r["a_tps"] / r["b_tps"], r["a_ll"], r["b_ll"], r["a_ll"] - r["b_ll"],
        r["a_ho"], r["b_ho"], r["a_ho"] - r["b_ho"]))
print()
for v in verdicts:
    print(v)
PY
