#!/usr/bin/env bash
# HPC label prediction on a second hierarchical corpus (issue 13 names one "where few
# documents carry a label and its parent"): linuxdoc, the Linux kernel's documentation
# as Debian ships it (5 346 documents, each labelled with its directory, 464 labels on
# a tree up to six deep; no document carries a label and its parent). The same systems,
# split and threshold protocol as bench/hpc_labels.sh (see bench/hpc_labels.py). The
# corpus comes from bench/prepare_linuxdoc.py (apt-get download of linux-doc-6.1, once).
# Usage: bash bench/hpc_labels_linuxdoc.sh [args of bench/hpc_labels.py...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f bench/out/linuxdoc.jsonl ] || python3 bench/prepare_linuxdoc.py
exec bash bench/hpc_labels.sh --data bench/out/linuxdoc.jsonl --source linuxdoc --out bench/out/hpc_labels_linuxdoc.jsonl "$@"
