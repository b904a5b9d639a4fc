// Workload W0 of docs/WORKLOADS.md: the engine's own cost per graph
// node. A chain of 1,000 tiny ops on 1×8 tensors, cycling add, mul and tanh
// (h ← h + a, h ← h ⊙ b, h ← tanh h), forward then backward; one step is
// both. At least 5 warm-up steps, then 101 timed steps; the median is reported,
// and us_per_op = the median step's time / 1,000 ops.
//
//   {"workload":"W0-autograd","threads":1,"median_ms":..,"us_per_op":..,"peak_rss_mb":..}
//
// The same chain in PyTorch is bench/peers/w0_autograd.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "autograd/ops.hpp"
#include "bench/memory.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

namespace {

constexpr int kOps = 1000;

// One step: forward through the chain, backward from its 1×8 output.
void step(const Var& x, Var& a, Var& b, const Tensor& upstream) {
    Var h = x;
    for (int i = 0; i < kOps; ++i) {
        switch (i % 3) {
        case 0: h = h + a; break;
        case 1: h = h * b; break;
        default: h = tanh(h); break;
        }
    }
    a.zero_grad();
    b.zero_grad();
    h.backward(upstream);
}

}  // namespace

int main() {
    Generator gen(0);
    const Var x(Tensor::normal(Shape{1, 8}, 0, 1, gen), true);
    Var a(Tensor::normal(Shape{1, 8}, 0, 0.1f, gen), true);
    Var b(Tensor::uniform(Shape{1, 8}, 0.9f, 1.1f, gen), true);
    const Tensor upstream = Tensor::ones(Shape{1, 8});
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (int i = 0; i < 10; ++i) step(x, a, b, upstream);  // warm-up
        std::vector<double> ms;
        for (int i = 0; i < 101; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            step(x, a, b, upstream);
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::nth_element(ms.begin(), ms.begin() + 50, ms.end());
        const double median = ms[50];
        std::printf("{\"workload\":\"W0-autograd\",\"threads\":%d,\"median_ms\":%.4f,\"us_per_op\":%.4f,"
                    "\"peak_rss_mb\":%.1f}\n",
                    threads, median, median * 1000.0 / kOps, bench::peak_rss_mb());
    }
    return 0;
}
