#!/usr/bin/env bash
# Builds every fuzz target with libFuzzer's instrumentation and
# AddressSanitizer (a nightly toolchain is all it needs; no cargo-fuzz) and
# runs each for SECONDS (default 60) from its committed seeds. New inputs go
# to a scratch folder, so corpus/ stays as committed; a crash leaves its
# input in artifacts/ and makes this script fail.
#   usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(read_tb5 cli_commands c_enumerate import_text import_bin sampler_bzip2)

seeds() {
    case $1 in
        read_tb5 | cli_commands | c_enumerate) echo corpus/tb5 ;;
        import_text) echo corpus/text ;;
        import_bin | sampler_bzip2) echo corpus/profiles ;;
        *) echo "no seeds for $1" >&2; exit 2 ;;
    esac
}

triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
# The flags cargo-fuzz passes; --target keeps them off build scripts.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares -Zsanitizer=address --cfg fuzzing \
 -Cdebug-assertions -Coverflow-checks"
cargo +nightly build -q --release --target "$triple" --target-dir target/run --bins

mkdir -p artifacts
for t in "${targets[@]}"; do
    work=$(mktemp -d)
    echo "fuzz: $t for ${secs}s from $(seeds "$t")"
    if ! "target/run/$triple/release/$t" "$work" "$(seeds "$t")" -max_total_time="$secs" \
        -max_len=65536 -rss_limit_mb=1024 -timeout=20 -artifact_prefix="artifacts/$t-" \
        -print_final_stats=1 >"$work.log" 2>&1; then
        tail -60 "$work.log"
        echo "fuzz: $t failed; the input is in fuzz/artifacts/" >&2
        exit 1
    fi
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work.log" | tr '\n' ' '
    echo
    rm -rf "$work" "$work.log"
done
