#!/bin/sh
# Makes sure doctest's header can be found: DOCTEST_INCLUDE=dir if given, else
# the system's (Debian's doctest-dev), which is installed here if missing.
set -e
if [ -n "$DOCTEST_INCLUDE" ]; then
    if [ -f "$DOCTEST_INCLUDE/doctest/doctest.h" ] || [ -f "$DOCTEST_INCLUDE/doctest.h" ]; then exit 0; fi
    echo "DOCTEST_INCLUDE=$DOCTEST_INCLUDE has no doctest/doctest.h" >&2
    exit 1
fi
[ -f /usr/include/doctest/doctest.h ] && exit 0
echo "doctest is missing: installing Debian's doctest-dev (apt-get)..." >&2
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq >&2 || true
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq doctest-dev >&2
[ -f /usr/include/doctest/doctest.h ] || { echo "installing doctest-dev failed; pass DOCTEST_INCLUDE=dir" >&2; exit 1; }
echo "doctest installed." >&2
