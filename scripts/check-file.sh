#!/bin/sh
# make check FILE=attention/scores.cpp: after an edit to one file, the checks
# of that file only (the Makefile has rebuilt the two test binaries first):
#   - the registry's generic checks (value against the reference, finite
#     differences, masking, properties) of every catalog entry whose id the
#     file or its header names as a string, e.g. "additive_score";
#   - every test file of tests/ and tests/grad/ that includes the file's
#     header, or the file itself when it is a test file.
# Usage: scripts/check-file.sh BUILD_DIR FILE
set -eu
build=$1
file=${2:?"make check needs FILE=path/to/file.cpp (or .hpp), e.g. make check FILE=attention/scores.cpp"}
[ -f "$file" ] || { echo "make check: FILE=$file: no such file" >&2; exit 2; }
header=${file%.*}.hpp
# a fast twin (nn/layernorm_fast.cpp) is checked by the tests of its readable file's header
case $file in *_fast.cpp) header=${file%_fast.cpp}.hpp ;; esac
names="$file"
[ -f "$header" ] && names="$names $header"

# The ids of the registry's entries (tests/grad/*: RegisterEntry name(N, "id", ...)).
registered=$(grep -rhoE 'RegisterEntry [A-Za-z_0-9]+\([0-9]+, "[a-z_0-9]+"' tests/grad | sed 's/.*"\(.*\)"/\1/' | sort -u)
ids=""
for id in $registered; do
    if grep -q "\"$id\"" $names; then ids="$ids${ids:+,}$id"; fi
done

# The test files: the file itself, or those that include its header.
case $file in
    tests/*) tests=$file ;;
    *) tests=$(grep -lE "#include \"($file|$header)\"" tests/*.cpp tests/grad/*.cpp 2>/dev/null || true) ;;
esac
unit_files=""; grad_files=""
for t in $tests; do
    case $t in
        tests/grad/*) grad_files="$grad_files${grad_files:+,}*$t" ;;
        tests/*) unit_files="$unit_files${unit_files:+,}*$t" ;;
    esac
done

echo "make check FILE=$file"
echo "  catalog entries: ${ids:-none}"
echo "  test files: $(echo $tests | tr '\n' ' ')"
status=0; ran=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Side by side, as make test runs them.
if [ -n "$ids" ]; then
    ATTN_MECHANISM=$ids "$build/tests/grad" -sf='*test_catalog.cpp' > "$logs/catalog" 2>&1 &
fi
if [ -n "$grad_files" ]; then
    "$build/tests/grad" -sf="$grad_files" > "$logs/grad" 2>&1 &
fi
if [ -n "$unit_files" ]; then
    "$build/tests/unit" -sf="$unit_files" > "$logs/unit" 2>&1 &
fi
wait
for run in catalog grad unit; do
    [ -f "$logs/$run" ] || continue
    ran=1
    line=$(grep '^\[doctest\] test cases:' "$logs/$run" | tail -n 1)
    if [ -z "$line" ] || grep -q 'Status: FAILURE' "$logs/$run"; then
        status=1
        cat "$logs/$run"
    fi
    echo "  $run: ${line#\[doctest\] }"
done
if [ $ran -eq 0 ]; then
    echo "make check: no catalog entry names $file and no test includes it; run make test" >&2
    exit 2
fi
exit $status
