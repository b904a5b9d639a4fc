#!/bin/sh
# Runs the doctest binaries given, each cut into TEST_SHARDS runs (default:
# one per core), all side by side: a suite is mostly one thread, so one
# process per suite left a core idle while the longer suite finished (under
# qemu-aarch64, minutes). A run takes a range (--first/--last) of the cases
# shuffled by a fixed seed (TEST_SEED, default 1), so the slow cases, which sit
# together in the files' order (fast_math, gemm, graph_draw), are spread over
# the runs; the same seed gives the same runs every time.
# Then prints, in the order given, each failed run's output (a passing run
# is one line; V=1 prints every run's output, the figures its cases report),
# the failed cases again with their failed checks (so that the end of a long
# log names them), and one total line: "N passed, N failed".
# TEST_RUNNER, if set, is a command to run them under (an emulator: make check-arm).
# The tests see it as ATTN_TEST_RUNNER: qemu-user cannot start a thread in a
# child forked from a process with threads (it aborts the child with status
# 127), so the fork test leaves out that part under it, saying so.
# TEST_EXCLUDE, if set, is doctest's -tce: test case names (patterns with *,
# separated by commas) left out of every run, the count included (make
# check-arm: what the emulator would spend minutes on and no processor
# changes).
# TEST_TIMEOUT (default 1200 s, twice the longest run seen, under qemu) stops a
# run that hangs: a test waiting forever fails, named, instead of holding CI
# until its own limit kills everything without a word.
#
# A run's own summary counts every case of the binary as passed or failed
# (doctest counts the cases outside --first/--last as passing its filters), so
# the total below counts each run's range, less the cases that failed in it.
status=0; passed=0; failed=0
export ATTN_TEST_RUNNER="$TEST_RUNNER"
limit=${TEST_TIMEOUT:-1200}
shards=${TEST_SHARDS:-$(nproc 2>/dev/null || echo 2)}
logs=$(mktemp -d)
i=0
for bin in "$@"; do
    i=$((i + 1))
    count=$($TEST_RUNNER "$bin" ${TEST_EXCLUDE:+"-tce=$TEST_EXCLUDE"} --count 2>/dev/null | sed -n 's/.*filters: *\([0-9][0-9]*\).*/\1/p')
    if [ -z "$count" ]; then
        # no count (the binary failed to start): one run, whose log says why
        echo "1 0" > "$logs/$i.1.range"
        { timeout -k 10 "$limit" $TEST_RUNNER "$bin" ${TEST_EXCLUDE:+"-tce=$TEST_EXCLUDE"} > "$logs/$i.1" 2>&1
          echo $? > "$logs/$i.1.rc"; } &
        continue
    fi
    per=$(( (count + shards - 1) / shards ))
    [ "$per" -ge 1 ] || per=1
    s=0; first=1
    while [ "$first" -le "$count" ]; do
        s=$((s + 1)); last=$((first + per - 1))
        [ "$last" -le "$count" ] || last=$count
        echo "$first $last $count" > "$logs/$i.$s.range"
        { timeout -k 10 "$limit" $TEST_RUNNER "$bin" ${TEST_EXCLUDE:+"-tce=$TEST_EXCLUDE"} --order-by=rand --rand-seed=${TEST_SEED:-1} --first=$first --last=$last \
              > "$logs/$i.$s" 2>&1; echo $? > "$logs/$i.$s.rc"; } &
        first=$((last + 1))
    done
done
wait
i=0
for bin in "$@"; do
    i=$((i + 1))
    s=1
    while [ -f "$logs/$i.$s.range" ]; do
        log="$logs/$i.$s"
        read -r first last count < "$log.range"
        line=$(grep '^\[doctest\] test cases:' "$log" | tail -n 1)
        f=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) failed.*/\1/p')
        if [ -z "$line" ] || [ "${f:-1}" -ne 0 ] || grep -q 'Status: FAILURE' "$log"; then
            echo "== $bin: test cases $first to $last${count:+ of $count}"
            cat "$log"
            status=1
            {
                echo "$bin, test cases $first to $last:"
                # each failed case's name and its first three failed checks
                awk 'function more() { if (errors > 3) print "    ... and " errors - 3 " more" }
                     /^TEST CASE:/ { more(); name = $0; errors = 0 }
                     /: (ERROR|FATAL ERROR):|terminate called|Sanitizer|runtime error/ {
                         if (errors == 0 && name != "") print "  " name
                         if (++errors <= 3) print "    " $0 }
                     END { more() }' "$log"
                rc=$(cat "$log.rc" 2>/dev/null)
                if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
                    # doctest prints a case's name only when it fails: the case running is not known here
                    echo "  stopped after $limit s (TEST_TIMEOUT): a test case hangs; run the range alone to find it:"
                    echo "    $bin --order-by=rand --rand-seed=${TEST_SEED:-1} --first=$first --last=$last -s"
                fi
                [ -n "$line" ] || { echo "  no summary (the run did not finish); its last lines:"; tail -n 5 "$log" | sed 's/^/    /'; }
            } >> "$logs/failed"
        elif [ "${V:-0}" = 1 ]; then
            echo "== $bin: test cases $first to $last${count:+ of $count}"
            cat "$log"
        else
            # a passing run in one line (V=1: its whole output, the figures its cases print)
            echo "== $bin: test cases $first to $last${count:+ of $count}: all $((last - first + 1)) passed"
        fi
        if [ -n "$line" ]; then
            passed=$((passed + last - first + 1 - f)); failed=$((failed + f))
        fi
        s=$((s + 1))
    done
done
# The failures again, last, so that the end of a long log (CI's) names them.
if [ -s "$logs/failed" ]; then
    echo "== failed:"
    cat "$logs/failed"
fi
rm -rf "$logs"
echo "tests: $passed passed, $failed failed${TEST_EXCLUDE:+ (left out: $TEST_EXCLUDE)}"
exit $status
