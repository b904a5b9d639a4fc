#!/bin/sh
# grade-lock.sh LOCK WHAT COMMAND...: runs COMMAND while holding LOCK, a
# flock(1) lock, so that one make grade (make progress, make grade-student)
# at a time builds the grader's archives and writes course/progress.txt in a
# tree: two at once truncated build/lib/*.a under each other. The Makefile
# takes it before building anything. WHAT (the command line, e.g. `make grade
# EX=softmax`) goes into LOCK with the holder's pid and start time, for the
# refusal to name. The lock belongs to the open file, which COMMAND inherits:
# it ends with COMMAND (killed too), and a stale LOCK file holds nothing.
# A second one refuses at once (exit 2), or waits GRADE_WAIT seconds first.
set -u
lock=$1
what=$2
shift 2
wait=${GRADE_WAIT:-0}
case $wait in
    '' | *[!0-9]*) echo "GRADE_WAIT: expected a whole number of seconds, got '$wait'" >&2; exit 2 ;;
esac
if ! command -v flock > /dev/null 2>&1; then
    # (macOS has no flock(1); Debian's is in util-linux, always installed.)
    echo "(flock(1) not found: this runs without the lock of one make grade at a time; run one at a time)" >&2
    exec "$@"
fi
mkdir -p "$(dirname "$lock")" 2> /dev/null
if [ -d "$lock" ] || ! (: >> "$lock") 2> /dev/null; then
    echo "the lock of one make grade at a time, $lock, cannot be opened for writing (a folder, or read-only): remove it or make it writable" >&2
    exit 2
fi
# Opened for appending: the holder's words are not truncated before the lock is ours.
exec 9>>"$lock"
flock -E 75 -w "$wait" 9
status=$?
if [ "$status" -eq 75 ]; then
    holder=$(head -n 1 "$lock" 2> /dev/null)
    echo "another make grade is running in this tree (${holder:-its holder did not say who it is}); wait for it or stop it" >&2
    exit 2
elif [ "$status" -ne 0 ]; then
    echo "the lock of one make grade at a time, $lock, could not be taken (flock(1) failed, above)" >&2
    exit 2
fi
# The same open file, truncated, then our words (the lock stays ours).
: > "$lock"
printf 'pid %s, started %s, `%s`\n' "$$" "$(date +%H:%M:%S)" "$what" >&9
exec "$@"
