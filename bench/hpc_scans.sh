#!/usr/bin/env bash
# HPC scan timings: steady-state scans (no mode refit) and mode-refit scans, timed
# separately, on (a) the AppStream corpus and (b) corpora drawn from HPC's generative
# process with 600 labels on a three-level tree (6, 54, 540), 15 000 words and about
# 60 tokens per document, at 7 500, 15 000 and 30 000 documents (time against
# non-zeros). 1 and 2 threads. Release build. Usage: bash bench/hpc_scans.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# BIN=path/to/topicd times a given binary (e.g. an older commit's) instead of building.
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --quiet
  BIN=${CARGO_TARGET_DIR:-target}/release/topicd
fi
OUT=bench/out
mkdir -p "$OUT"
APPSTREAM=${APPSTREAM:-tests/data/appstream.jsonl}
# `topicd fit --input` refuses unknown document keys: AppStream's go into `meta`.
python3 bench/strict_docs.py "$APPSTREAM" > "$OUT/appstream_strict.jsonl"
APPSTREAM=$OUT/appstream_strict.jsonl
for docs in 7500 15000 30000; do
  f="$OUT/hpc_synth_${docs}.jsonl"
  [ -s "$f" ] || "$BIN" simulate-hpc --documents "$docs" --out "$f" --seed 1 >/dev/null
done
# Scans 1 and 4 refit modes (hessian_every=3, burn-in 5); the other four are steady.
COMMON=(--model hpc --iterations 6 --burn-in 5 --param hessian_every=3 --param validation_fraction=0)
row() { # name threads extra-args... ; prints one table row
  local name=$1 threads=$2 input=$3; shift 3
  "$BIN" fit --input "$input" "${COMMON[@]}" --threads "$threads" "$@" | python3 -c "
import json, sys
d = json.loads(sys.stdin.read()); f = d['diagnostics']['fit']
print(f\"| $name | {d['documents']} | {d['topics']} | {d['nonzeros']} | $threads | {f['rate_curvature']} | {d['seconds_per_steady_scan']:.3f} | {d['seconds_per_refit_scan']:.3f} | {1e9 * d['seconds_per_steady_scan'] / d['nonzeros']:.0f} | {f['rate_acceptance']:.3f} | {f['affinity_acceptance']:.3f} |\")"
}
echo "| corpus | docs | labels | non-zeros | threads | curvature | steady s/scan | refit s/scan | steady ns/non-zero | rate acc. | affinity acc. |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for t in 1 2; do
  row appstream "$t" "$APPSTREAM" --keep-first-duplicate --stem --top-fraction 0.2
  row appstream "$t" "$APPSTREAM" --keep-first-duplicate --stem --top-fraction 0.2 --param rate_curvature=tree_diagonal
done
for docs in 7500 15000 30000; do
  for t in 1 2; do
    row "synthetic" "$t" "$OUT/hpc_synth_${docs}.jsonl" --stopwords none
  done
done
echo "load average (1, 5, 15 min) at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
