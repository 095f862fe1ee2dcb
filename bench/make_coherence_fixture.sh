#!/usr/bin/env bash
# Makes tests/data/coherence_fixture.json: gensim's CoherenceModel values for fixed
# top-word lists on topicd's own tokens of the first DOCS documents of
# tests/data/appstream_300.jsonl (default preprocessing), every measure and a few
# windows. topicd tokenises (GET /v1/corpora/{id}/tokens), gensim counts; the Rust test
# src/summaries/coherence_tests.rs recomputes every value to 1e-6.
#
# Usage:  bench/make_coherence_fixture.sh          Env: DOCS (120)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."          # project root
DOCS=${DOCS:-120}
OUT=bench/out/coherence_fixture
mkdir -p "$OUT"
python3 -c 'import gensim' 2>/dev/null || python3 -m pip install --quiet 'gensim>=4.4,<4.5'
cargo build --release --locked >&2
. bench/topicd_server.sh
start_topicd "$OUT"
head -n "$DOCS" tests/data/appstream_300.jsonl > "$OUT/docs.jsonl"
CORPUS=$(upload_text "$OUT/docs.jsonl" "name=coherence-fixture")
curl -sf "$TOPICD_URL/v1/corpora/$CORPUS/tokens" > "$OUT/tokens.jsonl"
python3 bench/coherence_gensim.py fixture --tokens "$OUT/tokens.jsonl" --out tests/data/coherence_fixture.json
echo "wrote tests/data/coherence_fixture.json ($(wc -c < tests/data/coherence_fixture.json) bytes)" >&2
