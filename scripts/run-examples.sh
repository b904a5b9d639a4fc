#!/bin/sh
# make run: trains every example on its built-in data with the settings that
# fit a minute or two each on 2 cores, and builds out/report.html.
# Each example is listed with its own flags; examples not built yet are skipped.
# --fast: the fused kernels (the same values up to rounding, about twice as
# fast); drop it to run the readable layers.
set -e
B=${1:-build}
run() {
    name=$1; shift
    if [ -x "$B/examples/$name" ]; then
        echo "== $name $*"
        "$B/examples/$name" --out out --fast "$@"
    else
        echo "== $name: not built, skipped"
    fi
}
run seq2seq --data dates
run caption --data shapes
run caption --data shapes --align hard    # beside the soft model, on the same images
run docclass --data needle
echo "report: out/report.html (make check-report clicks through it in headless Chromium)"
