#!/bin/sh
# make bench: runs the workloads of docs/WORKLOADS.md and prints one JSON
# object per line.
#
#   bench/run.sh BUILD_DIR [W0,W1,...]
#
# Workload Wn is every program $BUILD_DIR/bench/wn_* (from bench/wn_*.cpp), and
# its peers: bench/peers/wn_*.py run with Debian's python3 when python3-torch is
# installed. A peer's lines carry "peer":"torch" (or "openblas", measured
# inside the W1 program itself when libopenblas is installed). Ratios are printed
# at the end as lines with "ratio" fields, by bench/ratios.py.
set -u
B=${1:-build}
LIST=$(echo "${2:-W0,W1,W2,W3,W4,W5,W6}" | tr ',' ' ' | tr 'A-Z' 'a-z')
out=$(mktemp)
# The 1-thread runs of W2–W5, ours and PyTorch's, on one CPU, the last
# (bench/training_bench.hpp, bench/peers/torch_workloads.py): on the 2-core
# machine one vCPU ran single-threaded work ~25% slower than the other
# (docs/performance.md). ATTN_BENCH_CPU= (empty) leaves them unpinned.
if [ -z "${ATTN_BENCH_CPU+set}" ]; then
    cpus=$(nproc 2>/dev/null || echo 1)
    if [ "$cpus" -ge 2 ]; then ATTN_BENCH_CPU=$((cpus - 1)); else ATTN_BENCH_CPU=; fi
fi
export ATTN_BENCH_CPU
have_torch=0
if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then have_torch=1; fi
if [ $have_torch -eq 1 ] && [ ! -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 ]; then
    echo "bench: libopenblas0-openmp is not installed: torch runs with the pthread OpenBLAS, whose" \
         "threads fight torch's at 2 threads (apt-get install libopenblas0-openmp)" >&2
fi
for w in $LIST; do
    found=0
    for bin in "$B"/bench/"${w}"_*; do
        [ -x "$bin" ] || continue
        found=1
        "$bin" | tee -a "$out"
    done
    for peer in bench/peers/"${w}"_*.py; do
        [ -f "$peer" ] || continue
        if [ $have_torch -eq 1 ]; then
            # The peer configuration of WORKLOADS.md: glibc malloc without trimming,
            # OpenMP OpenBLAS, OpenBLAS's own CPU detection.
            env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
                GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
                LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \
                ATEN_CPU_CAPABILITY=avx512 \
                /usr/bin/python3 "$peer" | tee -a "$out"
        else
            echo "{\"workload\":\"$w\",\"peer\":\"torch\",\"skipped\":\"python3-torch is not installed (apt-get install python3-torch)\"}"
        fi
    done
    [ $found -eq 1 ] || echo "{\"workload\":\"$w\",\"skipped\":\"not built yet\"}"
done
if command -v python3 >/dev/null 2>&1 && [ -f bench/ratios.py ]; then python3 bench/ratios.py "$out"; fi
rm -f "$out"
