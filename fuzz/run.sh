#!/usr/bin/env bash
# Runs the fuzz targets (`topicd::fuzzing::TARGETS`) for a bounded time each.
#
#   fuzz/run.sh SECONDS [TARGET...]      (no target: all of them)
#
# Builds every target once (`cargo fuzz build`: release, debug assertions and overflow
# checks on, AddressSanitizer), writes each target's well-formed inputs
# (`valid_inputs`) into fuzz/corpus/<target>/ as seeds, then runs each target for
# SECONDS. A panic, an allocation above the memory limit or an input taking longer than
# the timeout is a finding: libFuzzer stops that target and the input is copied into
# tests/data/fuzz_regressions/<target>/ (named by its hash), which
# `cargo test --test fuzz_regressions` replays. Prints a summary table and exits 1 if
# anything was found.
#
# Environment: CARGO_TARGET_DIR (default fuzz/target), SANITIZER (default address;
# `none` runs about twice as fast but then only an allocation the allocator refuses,
# not one merely above the limit, is caught), CODEGEN_UNITS (default 4: the build is
# several minutes shorter than cargo fuzz's default of 1 for little loss of speed),
# MAX_LEN (default 65536 bytes), RSS_LIMIT_MB (default 2048), TIMEOUT (default 10 s).
#
# Only a stable toolchain is needed: cargo fuzz passes nightly flags (-Zsanitizer,
# -Cpasses=sancov-module, ...) to rustc, which RUSTC_BOOTSTRAP=1 lets stable accept.
# The AddressSanitizer runtime ships with the stable toolchain.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
    echo "usage: fuzz/run.sh SECONDS [TARGET...]" >&2
    exit 2
fi
seconds=$1
shift

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is not installed. Install it with:" >&2
    echo "    cargo install cargo-fuzz --locked" >&2
    echo "(a stable toolchain is enough: this script sets RUSTC_BOOTSTRAP=1)" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for f in "$here"/fuzz_targets/*.rs; do
        targets+=("$(basename "$f" .rs)")
    done
fi
for t in "${targets[@]}"; do
    if [ ! -f "$here/fuzz_targets/$t.rs" ]; then
        echo "no fuzz target is called $t (see fuzz/fuzz_targets/)" >&2
        exit 2
    fi
done

export RUSTC_BOOTSTRAP=1
sanitizer=${SANITIZER:-address}
target_dir=${CARGO_TARGET_DIR:-$here/target}
max_len=${MAX_LEN:-65536}
rss_limit=${RSS_LIMIT_MB:-2048}
timeout=${TIMEOUT:-10}

echo "== building the fuzz targets (sanitizer: $sanitizer)"
(cd "$here" && cargo fuzz build --sanitizer "$sanitizer" --codegen-units "${CODEGEN_UNITS:-4}" --target-dir "$target_dir") || {
    echo "the build failed" >&2
    exit 2
}
bin_dir="$target_dir/x86_64-unknown-linux-gnu/release"

echo "== seeding fuzz/corpus/ with valid inputs"
# The seeds program is built with the targets (same flags). ASan options of every run:
# LeakSanitizer off (statics and the rayon pool are not leaks), and no ODR check (the
# bundled SQLite amalgamation has two function-local statics both called `aiOff`,
# which ASan reports as one global defined twice).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:detect_odr_violation=0}
"$bin_dir/seeds" "$here/corpus" "${targets[@]}" || exit 2

logs="$here/artifacts/logs"
mkdir -p "$logs"
summary=()
found=0
for t in "${targets[@]}"; do
    echo "== $t: ${seconds}s"
    artifacts="$here/artifacts/$t"
    rm -rf "$artifacts"
    mkdir -p "$artifacts" "$here/corpus/$t"
    log="$logs/$t.log"
    start=$(date +%s)
    "$bin_dir/$t" "$here/corpus/$t" \
        -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb="$rss_limit" \
        -timeout="$timeout" -detect_leaks=0 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" >"$log" 2>&1
    rc=$?
    elapsed=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ -z "$runs" ]; then
        runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
        [ -n "$runs" ] && [ "$elapsed" -gt 0 ] && speed=$((runs / elapsed))
    fi
    findings=""
    for a in "$artifacts"/crash-* "$artifacts"/oom-* "$artifacts"/timeout-* "$artifacts"/leak-*; do
        [ -f "$a" ] || continue
        mkdir -p "$root/tests/data/fuzz_regressions/$t"
        cp "$a" "$root/tests/data/fuzz_regressions/$t/"
        findings="$findings $(basename "$a")"
    done
    if [ -n "$findings" ]; then
        found=1
        echo "   FOUND:$findings (log: fuzz/artifacts/logs/$t.log)"
        grep -m1 -E "panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer" "$log" | sed 's/^/   /'
    elif [ $rc -ne 0 ]; then
        found=1
        findings=" exit code $rc, no artifact (see fuzz/artifacts/logs/$t.log)"
        echo "  $findings"
    fi
    summary+=("$(printf '%-20s %12s %10s %6s  %s' "$t" "${runs:-?}" "${speed:-?}" "${elapsed}s" "${findings:- none}")")
done

echo
printf '%-20s %12s %10s %6s  %s\n' target runs execs/s time findings
for line in "${summary[@]}"; do
    echo "$line"
done
if [ $found -ne 0 ]; then
    echo
    echo "Findings were copied into tests/data/fuzz_regressions/<target>/;"
    echo "replay them with: cargo test --test fuzz_regressions"
    exit 1
fi
