#!/usr/bin/env bash
# Builds every fuzz target with libFuzzer's instrumentation and
# AddressSanitizer (a nightly toolchain is all it needs; no cargo-fuzz) and
# runs each for SECONDS (default 60) from its committed seeds. New inputs go
# to a scratch folder, so corpus/ stays as committed; a crash leaves its
# input in artifacts/ and makes this script fail.
#   usage: fuzz/run.sh [SECONDS|ci] [TARGET...]
# `ci` runs a fixed number of inputs per target from a fixed seed (about 20 s
# each here), so that CI's length does not depend on the machine's speed.
# (The inputs can still differ between runs: coverage depends on hash-map
# order in places. Each fixed crash has its own test.)
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true

# The longest input per target: Intel's files (corpus/intel) are larger.
max_len() {
    case $1 in
        read_intel) echo 131072 ;;
        *) echo 65536 ;;
    esac
}

# Inputs per target in `ci` mode.
ci_runs() {
    case $1 in
        read_tb5) echo 100000 ;;
        read_intel) echo 15000 ;;
        cli_commands) echo 300 ;;
        c_enumerate) echo 5000 ;;
        import_text) echo 50000 ;;
        import_bin) echo 150000 ;;
        sampler_bzip2) echo 800 ;;
    esac
}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(read_tb5 read_intel cli_commands c_enumerate import_text import_bin sampler_bzip2)

seeds() {
    case $1 in
        read_tb5 | cli_commands | c_enumerate) echo corpus/tb5 ;;
        read_intel) echo ../tbrw/tests/data/intel ;;
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
    if [ "$secs" = ci ]; then
        limit=(-seed=1 -runs="$(ci_runs "$t")")
        echo "fuzz: $t, ${limit[1]#-runs=} inputs from seed 1 and $(seeds "$t")"
    else
        limit=(-max_total_time="$secs")
        echo "fuzz: $t for ${secs}s from $(seeds "$t")"
    fi
    if ! "target/run/$triple/release/$t" "$work" "$(seeds "$t")" "${limit[@]}" \
        -max_len="$(max_len "$t")" -rss_limit_mb=1024 -timeout=20 -artifact_prefix="artifacts/$t-" \
        -print_final_stats=1 >"$work.log" 2>&1; then
        tail -60 "$work.log"
        echo "fuzz: $t failed; the input is in fuzz/artifacts/" >&2
        exit 1
    fi
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work.log" | tr '\n' ' '
    echo
    rm -rf "$work" "$work.log"
done
