#!/usr/bin/env bash
# Imports each hostile input of cli/examples/hostile_inputs.rs with the
# release `tbrw` under /usr/bin/time -v and prints its exit status, wall
# time and peak resident memory. Every import must end (an error is the
# expected outcome for most) within seconds and under 300 MiB; the script
# fails otherwise. Inputs and outputs go to a scratch folder it removes.
#   usage: scripts/hostile-inputs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p tbrw-cli --bin tbrw --example hostile_inputs
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
target/release/examples/hostile_inputs "$dir" >/dev/null
tbrw=target/release/tbrw
limit_kb=$((300 * 1024))
failed=0
printf '%-44s %6s %9s %10s\n' input status seconds "peak MiB"
run() {
    local name=$1
    shift
    /usr/bin/time -v -o "$dir/time" "$tbrw" "$@" >/dev/null 2>"$dir/err" && status=0 || status=$?
    local rss secs
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time")
    secs=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time")
    printf '%-44s %6s %9s %10s\n' "$name" "$status" "$secs" "$((rss / 1024))"
    if [ "$status" -gt 3 ] || [ "$rss" -gt "$limit_kb" ]; then
        echo "  over the bound, or not an orderly exit: $(head -c 300 "$dir/err")"
        failed=1
    fi
    rm -f "$dir"/out*.tb5
}
run "sampler: bzip2, 10^8 threads claimed"  import sampler "$dir/threads.prof.bz2" -o "$dir/out1.tb5"
run "sampler: bzip2, 7,000,000 maps claimed" import sampler "$dir/maps.prof.bz2" -o "$dir/out2.tb5"
run "mtmc: one 100 MB line of commas"        import mtmc "$dir/commas.log" -o "$dir/out3.tb5" --pid 1
run "mtmc: one 100 MB number"                import mtmc "$dir/number.log" -o "$dir/out4.tb5" --pid 1
run "winidea: a 100 MB header line"          import winidea "$dir/header.txt" -o "$dir/out5.tb5"
run "winidea: 160,000 contexts, --check"     import winidea "$dir/contexts.txt" -o "$dir/out6.tb5" --check
run "winidea: 20,000 columns x 100 rows"     import winidea "$dir/columns.txt" -o "$dir/out7.tb5" --check
run "winidea: a 24 GiB sparse .BIN"          import winidea "$dir/sparse.txt" --bin "$dir/sparse.BIN" --bin-version 1.1 -o "$dir/out8.tb5"
exit $failed
