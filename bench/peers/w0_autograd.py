"""Workload W0 in PyTorch, the peer of bench/w0_autograd.cpp: a chain of 1,000
tiny ops on 1x8 float32 tensors cycling add, mul and tanh, forward then
backward, 10 warm-up steps then 101 timed ones; prints the same JSON line with
"peer":"torch"."""
import json
import resource
import time

import torch

OPS = 1000


def step(x, a, b, upstream):
    h = x
    for i in range(OPS):
        r = i % 3
        if r == 0:
            h = h + a
        elif r == 1:
            h = h * b
        else:
            h = torch.tanh(h)
    a.grad = None
    b.grad = None
    h.backward(upstream)


def main():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 8, generator=g, requires_grad=True)
    a = (0.1 * torch.randn(1, 8, generator=g)).requires_grad_()
    b = (0.9 + 0.2 * torch.rand(1, 8, generator=g)).requires_grad_()
    upstream = torch.ones(1, 8)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for _ in range(10):
            step(x, a, b, upstream)
        times = []
        for _ in range(101):
            t0 = time.perf_counter()
            step(x, a, b, upstream)
            times.append((time.perf_counter() - t0) * 1000.0)
        times.sort()
        median = times[50]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        print(json.dumps({"workload": "W0-autograd", "threads": threads, "median_ms": round(median, 4),
                          "us_per_op": round(median * 1000.0 / OPS, 4), "peak_rss_mb": round(rss, 1),
                          "peer": "torch"}, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
