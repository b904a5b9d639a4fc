"""Workload W6 in PyTorch, the peer of bench/w6_attention.cpp: naive scaled
dot-product attention (materialising the L x L scores), forward + backward of a
fixed random upstream gradient, q, k, v of 128 x L x 64 float32, L in {64, 256,
1024}, with and without a causal mask, at 1 and 2 threads. torch 1.13 has no
fused CPU attention, so only the naive version has a peer.

Each configuration runs in its own process (peak RSS is its own, as in ours;
rss_increase_mb is the growth after torch is loaded);
OpenBLAS, which torch calls for GEMM, gets the thread count through
OPENBLAS_NUM_THREADS. Median over 30 steps after 5 warm-up steps; a
configuration whose first step takes over a second runs 2 warm-up steps and as
many steps as fit in ~20 s, at least 5. Prints the same JSON lines as ours with
"peer":"torch":

    {"workload":"W6-attention","impl":"naive","L":1024,"causal":false,"threads":1,
     "median_ms":..,"peak_rss_mb":..,"rss_increase_mb":..,"warmup":2,"steps":12,"peer":"torch"}

    /usr/bin/python3 bench/peers/w6_attention.py [L ...]
"""
import json
import math
import os
import statistics
import subprocess
import sys
import time

BATCH, WIDTH = 128, 64


def rss_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def child(L, causal, threads):
    import torch

    torch.set_num_threads(threads)
    base = rss_mb("VmRSS")  # after torch itself (~230 MB): the increase is the run's own
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(BATCH, L, WIDTH, generator=g).requires_grad_() for _ in range(3))
    upstream = torch.randn(BATCH, L, WIDTH, generator=g)
    future = torch.ones(L, L, dtype=torch.bool).triu(1)

    def step():
        q.grad = k.grad = v.grad = None
        scores = q @ k.transpose(1, 2) / math.sqrt(WIDTH)
        if causal:
            scores = scores.masked_fill(future, float("-inf"))
        (torch.softmax(scores, -1) @ v).backward(upstream)

    def timed():
        t0 = time.perf_counter()
        step()
        return (time.perf_counter() - t0) * 1000.0

    first = timed()
    slow = first > 1000
    warmup = 2 if slow else 5
    for _ in range(warmup - 1):
        timed()
    steps = max(5, min(30, int(20000 / first))) if slow else 30
    median = statistics.median(timed() for _ in range(steps))
    peak = rss_mb("VmHWM")
    print(json.dumps({"workload": "W6-attention", "impl": "naive", "L": L, "causal": causal, "threads": threads,
                      "median_ms": round(median, 3), "peak_rss_mb": round(peak, 1),
                      "rss_increase_mb": round(peak - base, 1), "warmup": warmup, "steps": steps,
                      "peer": "torch"}, separators=(",", ":")), flush=True)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        return child(int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]))
    lengths = [int(a) for a in sys.argv[1:]] or [64, 256, 1024]
    for L in lengths:
        for causal in (False, True):
            for threads in (1, 2):
                env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
                cmd = [sys.executable, __file__, "--child", str(L), "1" if causal else "0", str(threads)]
                try:
                    subprocess.run(cmd, env=env, timeout=600, check=True)
                except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as e:
                    print(json.dumps({"workload": "W6-attention", "impl": "naive", "L": L, "causal": causal,
                                      "threads": threads, "peer": "torch", "error": str(e)}), flush=True)


if __name__ == "__main__":
    main()
