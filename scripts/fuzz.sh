#!/bin/sh
# Runs the libFuzzer targets built in BUILD/fuzz/ for SECONDS each (ONLY: a
# comma-separated list of target names, empty for all), one per core at a
# time (FUZZ_JOBS, default nproc). Seeds come from fuzz/corpus/TARGET/ (read
# only); what the fuzzer adds goes to BUILD/corpus/TARGET/. Prints one line
# per target and fails if any found a crash: its input is left in BUILD/ as
# crash-*, leak-* or timeout-*.
set -u
BUILD=$1
SECONDS_EACH=$2
ONLY=${3:-}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# One target: fuzz it, then write its line to $results/NAME (ok or FAILED).
fuzz_one() {
    name=$1
    corpus="$BUILD/corpus/$name"
    mkdir -p "$corpus"
    log="$BUILD/fuzz-$name.log"
    if (cd "$BUILD" && "./fuzz/$name" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 "corpus/$name" "../../fuzz/corpus/$name") >"$log" 2>&1; then
        result=ok
    else
        result="FAILED (see $log)"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    printf 'fuzz %-14s %12s executions in %ss: %s\n' "$name" "${runs:-?}" "$SECONDS_EACH" "$result" > "$results/$name"
}

# The targets dealt round-robin into `jobs` queues, each queue run in order
# in the background.
names=""
for bin in "$BUILD"/fuzz/*; do
    name=$(basename "$bin")
    if [ -n "$ONLY" ] && ! printf ',%s,' "$ONLY" | grep -q ",$name,"; then continue; fi
    names="$names $name"
done
q=0
while [ "$q" -lt "$jobs" ]; do
    (
        i=0
        for name in $names; do
            [ $((i % jobs)) -eq "$q" ] && fuzz_one "$name"
            i=$((i + 1))
        done
    ) &
    q=$((q + 1))
done
wait

status=0
for name in $names; do
    if [ -f "$results/$name" ]; then cat "$results/$name"; else echo "fuzz $name: no result"; status=1; fi
    grep -q ': ok$' "$results/$name" 2>/dev/null || status=1
done
exit $status
