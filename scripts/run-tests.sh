#!/bin/sh
# Runs the doctest binaries given side by side (each is mostly one thread, and
# the machine may have more), then prints their output in the order given and
# one total line: "N passed, N failed".
# TEST_RUNNER, if set, is a command to run them under (an emulator: make check-arm).
status=0; passed=0; failed=0
logs=$(mktemp -d)
i=0
for bin in "$@"; do
    i=$((i + 1))
    $TEST_RUNNER "$bin" > "$logs/$i" 2>&1 &
done
wait
i=0
for bin in "$@"; do
    i=$((i + 1))
    log="$logs/$i"
    echo "== $bin"
    cat "$log"
    line=$(grep '^\[doctest\] test cases:' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) failed.*/\1/p')
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
    if [ -z "$line" ] || [ "${f:-1}" -ne 0 ] || grep -q 'Status: FAILURE' "$log"; then status=1; fi
done
rm -rf "$logs"
echo "tests: $passed passed, $failed failed"
exit $status
