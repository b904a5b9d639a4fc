#!/bin/sh
# Runs each doctest binary given, then prints one total line: "N passed, N failed".
# TEST_RUNNER, if set, is a command to run them under (an emulator: make check-arm).
status=0; passed=0; failed=0
for bin in "$@"; do
    echo "== $bin"
    log=$(mktemp)
    $TEST_RUNNER "$bin" 2>&1 | tee "$log"
    line=$(grep '^\[doctest\] test cases:' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.*| *\([0-9]*\) failed.*/\1/p')
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
    if [ -z "$line" ] || [ "${f:-1}" -ne 0 ] || grep -q 'Status: FAILURE' "$log"; then status=1; fi
    rm -f "$log"
done
echo "tests: $passed passed, $failed failed"
exit $status
