#!/usr/bin/env bash
# Topic coherence: topicd's GET /v1/models/{id}/coherence vs gensim 4.4's CoherenceModel
# (processes=1) on the same top words and the same tokens, in one run.
#
# topicd fits LDA on ../shared/data/appstream.jsonl (uploaded as text, default
# preprocessing, its one repeated id kept once); gensim gets topicd's tokens (GET /v1/corpora/{id}/tokens) and each
# measure's top words as topicd answered them. Per measure: the largest difference of a
# topic's value, and the median seconds per call over REPEATS calls (topicd's over HTTP,
# reading and decoding the stored corpus each time; gensim's building its accumulator
# each time, its Dictionary and bag-of-words corpus made once beforehand).
#
# Usage:  bench/coherence_vs_gensim.sh
# Env:    TOPICS (K, 50), ITERATIONS (LDA sweeps, 200), TOP_N (10), REPEATS (5), SEED (1)
# Output: raw JSON lines in bench/out/raw/coherence_*.json, the table in
#         bench/out/coherence_vs_gensim.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."          # project root
TOPICS=${TOPICS:-50}
ITERATIONS=${ITERATIONS:-200}
TOP_N=${TOP_N:-10}
REPEATS=${REPEATS:-5}
SEED=${SEED:-1}
OUT=bench/out/coherence
RAW=bench/out/raw
mkdir -p "$OUT" "$RAW"
python3 -c 'import gensim' 2>/dev/null || python3 -m pip install --quiet 'gensim>=4.4,<4.5'
cargo build --release --locked >&2
. bench/topicd_server.sh
start_topicd "$OUT"

CORPUS=$(upload_text ../shared/data/appstream.jsonl "name=appstream&duplicate_ids=keep_first")
curl -sf "$TOPICD_URL/v1/corpora/$CORPUS/tokens" > "$OUT/tokens.jsonl"
JOB=$(curl -sf -X POST "$TOPICD_URL/v1/jobs" -H 'Content-Type: application/json' \
  -d "{\"corpus_id\": \"$CORPUS\", \"model\": \"lda\", \"params\": {\"topics\": $TOPICS, \"iterations\": $ITERATIONS}, \"seed\": $SEED}" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
echo "== fitting LDA K=$TOPICS ($ITERATIONS sweeps) on appstream, job $JOB" >&2
while :; do
  STATUS=$(curl -sf "$TOPICD_URL/v1/jobs/$JOB" | python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["status"], j.get("model_id") or "")')
  case $STATUS in
    succeeded*) MODEL=${STATUS#succeeded }; break ;;
    queued*|running*) sleep 1 ;;
    *) echo "fit ended: $STATUS" >&2; exit 1 ;;
  esac
done

read -r LOAD1 _ < /proc/loadavg
echo "== coherence, model $MODEL (1-min load average $LOAD1)" >&2
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
  python3 bench/coherence_gensim.py bench --url "$TOPICD_URL" --model "$MODEL" --tokens "$OUT/tokens.jsonl" \
  --top-n "$TOP_N" --repeats "$REPEATS" > "$RAW/coherence_appstream.json"
read -r LOAD2 _ < /proc/loadavg

python3 - "$RAW/coherence_appstream.json" "$LOAD1" "$LOAD2" "$TOPICS" "$TOP_N" <<'PY' | tee bench/out/coherence_vs_gensim.md
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"appstream ({rows[0]['virtual_documents']} documents), LDA K = {sys.argv[4]}, top {sys.argv[5]} words; gensim {rows[0]['gensim_version']} CoherenceModel(processes=1); load average {sys.argv[2]} → {sys.argv[3]}")
print()
print("| measure | window | virtual documents | topicd mean | gensim mean | max \\|Δ\\| per topic | topicd s/call | gensim s/call | gensim / topicd |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['measure']} | {r['window']} | {r['virtual_documents']} | {r['topicd_mean']:.6f} | {r['gensim_mean']:.6f} | {r['max_abs_diff']:.1e} "
          f"| {r['topicd_s']:.4f} | {r['gensim_s']:.3f} | {r['gensim_s'] / r['topicd_s']:.0f}x |")
PY
