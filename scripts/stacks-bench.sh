#!/usr/bin/env bash
# The call-stack figures of docs/FORMAT.md "Stack table" and docs/PARQUET.md
# "Scale": a `perf record -F 20000 -g` recording imported, bound and exported
# by a `tbrw` binary, each step timed (wall and CPU seconds, peak RSS).
#
#   scripts/stacks-bench.sh record DIR [SECONDS [THREADS]]  # busy.c recorded into DIR/perf.data
#                                                # (PERF_FLAGS=-a: system-wide)
#   scripts/stacks-bench.sh run TBRW DIR NAME     # TBRW's figures on DIR/perf.data, in DIR/NAME/
#
# Give TBRW as a release build: `cargo build --release -p tbrw-cli --bin tbrw`
# (for the figures before a change, the same in a checkout of the older
# commit). DIR should be outside the repository (the recording is hundreds
# of MB): target/, $TBRW_BENCH_DIR or /dev/shm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

case "${1:-}" in
record)
    dir=$2 secs=${3:-130} threads=${4:-$(nproc)}
    mkdir -p "$dir"
    gcc -O2 -g -fno-omit-frame-pointer -o "$dir/busy" "$here/stacks-bench/busy.c" -lm -lpthread
    # 20 kHz per thread of CPU time: 2 CPUs x 130 s = 5.2 M samples on an
    # idle machine (docs/PARQUET.md "Call stacks" has what a busy one gave).
    # shellcheck disable=SC2086
    perf record -F 20000 -g ${PERF_FLAGS:-} -o "$dir/perf.data" -- "$dir/busy" "$secs" "$threads"
    ;;
run)
    tbrw=$2 dir=$3 name=$4
    out="$dir/$name"
    rm -rf "$out" && mkdir -p "$out"
    step() { # step LABEL CMD...: one line "LABEL wall_s cpu_s max_rss_MiB"
        local label=$1; shift
        /usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" "$@" > "$out/$label.out" 2> "$out/$label.err" \
            || { echo "$label failed:"; cat "$out/$label.err"; exit 1; }
        read -r wall user sys rss < <(tail -1 "$out/time.txt")
        printf '%-20s %8.2f s  %8.2f s CPU  %7.0f MiB\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$((rss / 1024))"
    }
    step import "$tbrw" import perf "$dir/perf.data" -o "$out/run.tb5"
    cp "$out/run.tb5" "$out/bound.tb5"
    step bind "$tbrw" bind "$out/bound.tb5"
    step report-function "$tbrw" report "$out/bound.tb5" --by function --search-path "$dir"
    step report-module "$tbrw" report "$out/bound.tb5" --by module
    step report-children "$tbrw" report "$out/bound.tb5" --children --search-path "$dir"
    step flamegraph "$tbrw" export flamegraph "$out/bound.tb5" -o "$out/f.svg" --search-path "$dir"
    step pprof "$tbrw" export pprof "$out/bound.tb5" -o "$out/p.pb.gz" --search-path "$dir"
    step firefox "$tbrw" export firefox "$out/bound.tb5" -o "$out/f.json.gz" --search-path "$dir"
    step parquet "$tbrw" export parquet "$out/bound.tb5" -o "$out/ds"
    ls -l "$dir/perf.data" "$out/run.tb5" "$out/bound.tb5"
    du -sb "$out/ds"
    rm -rf "$out/ds" "$out/f.svg" "$out/p.pb.gz" "$out/f.json.gz"
    ;;
*)
    sed -n '2,14p' "$0"
    exit 2
    ;;
esac
