#!/usr/bin/env bash
# Two topicd builds on the LDA dense kernel, side by side: build A on one core and build
# B on the other at the same time (one fit each, linuxdoc, K = 100, α = 0.5, β = 0.01,
# 30 iterations, one thread, seed 1), then the cores swapped, N times; prints each
# pair's tokens/s and the ratio B/A, and the median ratio over the pairs.
#
# Why pairs: on these shared virtual machines the speed of a lone run drifts by 10 %
# and more between minutes, which hides a change of a few percent; two runs at the same
# moment see the same drift. The first pair of a session often reads low for whichever
# build starts second (page cache, frequency ramp): it is printed but left out of the
# median. Check A against itself first: its median should be 1.00 ± 0.02.
#
# Usage: bench/lda_pair.sh N ISA BIN_A BIN_B   (ISA: avx2, avx512 or portable, through
#        TOPICD_LDA_ISA; bench/out/linuxdoc_bow.jsonl from bench/prepare_linuxdoc.py)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=$1; ISA=$2; A=$3; B=$4
BOW=bench/out/linuxdoc_bow.jsonl
[ -s "$BOW" ] || python3 bench/prepare_linuxdoc.py
run() {  # core, binary
  TOPICD_LDA_ISA=$ISA taskset -c "$1" "$2" fit --input "$BOW" --model lda --topics 100 --alpha 0.5 --beta 0.01 \
    --iterations 30 --seed 1 --threads 1 --stopwords none --min-df 1 2>/dev/null |
    python3 -c "import json, sys; d = json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d['tokens_per_second'], d['loglik_per_token'])"
}
out=$(mktemp -d)
ratios=()
for i in $(seq 1 "$N"); do
  if (( i % 2 )); then ca=0; cb=1; else ca=1; cb=0; fi
  run "$ca" "$A" > "$out/a" & run "$cb" "$B" > "$out/b"; wait
  read -r ta la < "$out/a"; read -r tb lb < "$out/b"
  r=$(python3 -c "print(f'{$tb / $ta:.3f}')")
  echo "pair $i: A $(python3 -c "print(f'{$ta / 1e6:.2f}')") M tok/s (ll $la), B $(python3 -c "print(f'{$tb / 1e6:.2f}')") M tok/s (ll $lb), B/A $r"
  (( i > 1 )) && ratios+=("$r")
done
rm -rf "$out"
python3 -c "import statistics, sys; r = [float(x) for x in sys.argv[1:]]; print(f'median B/A over pairs 2..$N: {statistics.median(r):.3f}' if r else 'need N >= 2')" "${ratios[@]}"
