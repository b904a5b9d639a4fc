#!/bin/sh
# Runs the libFuzzer targets built in BUILD/fuzz/ for SECONDS each (ONLY: a
# comma-separated list of target names, empty for all). Seeds come from
# fuzz/corpus/TARGET/ (read only); what the fuzzer adds goes to
# BUILD/corpus/TARGET/. Prints one line per target and fails if any found a
# crash: its input is left in BUILD/ as crash-*, leak-* or timeout-*.
set -u
BUILD=$1
SECONDS_EACH=$2
ONLY=${3:-}
status=0
for bin in "$BUILD"/fuzz/*; do
    name=$(basename "$bin")
    if [ -n "$ONLY" ] && ! printf ',%s,' "$ONLY" | grep -q ",$name,"; then continue; fi
    corpus="$BUILD/corpus/$name"
    mkdir -p "$corpus"
    log="$BUILD/fuzz-$name.log"
    if (cd "$BUILD" && "./fuzz/$name" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 "corpus/$name" "../../fuzz/corpus/$name") >"$log" 2>&1; then
        result=ok
    else
        result="FAILED (see $log)"
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    printf 'fuzz %-14s %12s executions in %ss: %s\n' "$name" "${runs:-?}" "$SECONDS_EACH" "$result"
done
exit $status
