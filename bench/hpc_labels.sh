#!/usr/bin/env bash
# HPC label prediction on AppStream (issue 13): topicd's HPC through the HTTP service
# (upload, fit, /predict) against scikit-learn's L2 logistic regression and linear SVM
# and tomotopy's Labeled LDA, on the same split and with the same threshold protocol
# (see bench/hpc_labels.py's docstring). Prints a Markdown table; one JSON line per
# system is appended to bench/out/hpc_labels.jsonl. Extra arguments go to the Python
# script, e.g. `--hpc-param predictor=mode --label "HPC mode"` or `--skip-baselines`.
# Usage: bash bench/hpc_labels.sh [args...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --quiet
  BIN=${CARGO_TARGET_DIR:-target}/release/topicd
fi
if ! python3 -c 'import sklearn, numpy' 2>/dev/null; then
  python3 -m pip install --quiet 'scikit-learn>=1.3' numpy
fi
if ! python3 -c 'import sys, tomotopy; v = tuple(map(int, tomotopy.__version__.split(".")[:2])); sys.exit(v != (0, 14))' 2>/dev/null; then
  python3 -m pip install --quiet 'tomotopy>=0.14,<0.15'
fi
mkdir -p bench/out
echo "load average (1, 5, 15 min) at the start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 -W ignore bench/hpc_labels.py --bin "$BIN" "$@"
echo "load average (1, 5, 15 min) at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
