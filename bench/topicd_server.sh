# Sourced by bench scripts that talk to a running topicd (not run directly).
# start_topicd DIR: serve target/release/topicd on a free port with a database in DIR;
# sets TOPICD_URL and stops the server when the calling script exits.
# upload_text FILE QUERY: POST an NDJSON corpus (unknown document keys moved into `meta`
# by bench/strict_docs.py), print its id.
start_topicd() {
  local dir=$1
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  rm -f "$dir"/topicd.db*
  target/release/topicd serve --addr "127.0.0.1:$port" --db "$dir/topicd.db" > "$dir/topicd.log" 2>&1 &
  TOPICD_PID=$!
  trap 'kill "$TOPICD_PID" 2>/dev/null || true' EXIT
  TOPICD_URL="http://127.0.0.1:$port"
  for _ in $(seq 100); do
    curl -sf "$TOPICD_URL/readyz" > /dev/null && return 0
    sleep 0.1
  done
  echo "topicd did not start; see $dir/topicd.log" >&2
  return 1
}

upload_text() {
  python3 bench/strict_docs.py "$1" \
    | curl -sf -X POST -H 'Content-Type: application/x-ndjson' --data-binary @- "$TOPICD_URL/v1/corpora?$2" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
