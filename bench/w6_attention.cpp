// Workload W6 of docs/WORKLOADS.md: scaled dot-product attention alone,
// forward + backward. q, k, v are 128×L×64 (batch·heads 128, head width 64),
// L ∈ {64, 256, 1024}, with and without a causal mask; one step is the forward
// and the backward of a fixed random upstream gradient (no optimiser).
//
//   naive   scaled_dot_product_attention (attention/transformer.hpp): the
//           composite of scale, matmul, masked softmax, matmul; it
//           materialises the 128×L×L scores and weights.
//   fused   scaled_dot_product_attention_fused (attention/fused_attention.hpp):
//           tiled, online softmax, hand-written backward; nothing L×L.
//
// Each configuration (impl, L, causal, threads) runs in its own forked child
// process, so that its peak memory is its own: the child reads VmRSS before
// allocating anything and VmHWM (peak resident set) at the end, and reports
// both the peak and the increase (which include what glibc's malloc keeps for
// reuse: blocks under 32 MB migrate from mmap to the heap after the first
// free, so at L = 256 the fused version's ~75 MB of live tensors leave a
// ~200 MB heap; at L = 1024 every tensor is mmapped and RSS is the live data).
// Time: the median over 30 steps after 5 warm-up steps; a configuration whose
// first step takes over a second (L = 1024) runs 2 warm-up steps and as many
// steps as fit in ~20 s, at least 5 ("warmup" and "steps" say how many).
//
//   {"workload":"W6-attention","impl":"fused","L":1024,"causal":false,"threads":1,"median_ms":..,
//    "peak_rss_mb":..,"rss_increase_mb":..,"warmup":5,"steps":30}
//
// then one line per (L, causal, threads) with the naive/fused ratios of time
// and of memory increase. The torch peer (the naive version) is
// bench/peers/w6_attention.py.
//
//   build/bench/w6_attention [L] [naive|fused]      (a subset, for a quick look)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention/fused_attention.hpp"
#include "bench/memory.hpp"
#include "attention/scaled_dot_product.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

namespace {

constexpr int64_t kBatch = 128, kWidth = 64;

struct Config {
    std::string impl;
    int64_t L;
    bool causal;
    int threads;
};

struct Result {
    double median_ms = 0, peak_mb = 0, increase_mb = 0;
};

Result run(const Config& c, int* warmup_out, int* steps_out) {
    set_num_threads(c.threads);
    const double base_mb = bench::current_rss_mb();
    Generator gen(0);
    const Shape shape{kBatch, c.L, kWidth};
    Var q(Tensor::normal(shape, 0, 1, gen), true), k(Tensor::normal(shape, 0, 1, gen), true);
    Var v(Tensor::normal(shape, 0, 1, gen), true);
    const Tensor upstream = Tensor::normal(shape, 0, 1, gen);
    FusedAttentionOptions fused;
    fused.causal = c.causal;
    auto step = [&] {
        q.zero_grad(), k.zero_grad(), v.zero_grad();
        Var out = c.impl == "fused" ? scaled_dot_product_attention_fused(q, k, v, {}, fused).output
                                    : scaled_dot_product_attention(q, k, v, {}, c.causal).output;
        out.backward(upstream);
    };
    auto timed = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        step();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    const double first = timed();
    const bool slow = first > 1000;
    const int warmup = slow ? 2 : 5;
    for (int i = 1; i < warmup; ++i) timed();
    const int steps = slow ? std::max(5, std::min(30, static_cast<int>(20000 / first))) : 30;
    std::vector<double> ms;
    for (int i = 0; i < steps; ++i) ms.push_back(timed());
    std::sort(ms.begin(), ms.end());
    *warmup_out = warmup, *steps_out = steps;
    const double median = steps % 2 ? ms[steps / 2] : (ms[steps / 2 - 1] + ms[steps / 2]) / 2;
    const double peak = bench::peak_rss_mb();
    return {median, peak, peak - base_mb};
}

// Runs one configuration in a child process; prints its JSON line there and
// hands the numbers back through a pipe.
bool run_in_child(const Config& c, Result* result) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        int warmup = 0, steps = 0;
        const Result r = run(c, &warmup, &steps);
        std::printf("{\"workload\":\"W6-attention\",\"impl\":\"%s\",\"L\":%lld,\"causal\":%s,\"threads\":%d,"
                    "\"median_ms\":%.3f,\"peak_rss_mb\":%.1f,\"rss_increase_mb\":%.1f,\"warmup\":%d,\"steps\":%d}\n",
                    c.impl.c_str(), static_cast<long long>(c.L), c.causal ? "true" : "false", c.threads,
                    r.median_ms, r.peak_mb, r.increase_mb, warmup, steps);
        std::fflush(stdout);
        const bool ok = write(fd[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    const bool ok = pid > 0 && read(fd[0], result, sizeof *result) == static_cast<ssize_t>(sizeof *result);
    close(fd[0]);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Nothing here may start the thread pool: each child sets its own thread count.
    const int64_t only_L = argc > 1 ? std::atoll(argv[1]) : 0;
    const std::string only_impl = argc > 2 ? argv[2] : "";
    for (int64_t L : {64, 256, 1024}) {
        if (only_L && L != only_L) continue;
        for (bool causal : {false, true})
            for (int threads : {1, 2}) {
                Result naive, fused;
                bool have_naive = false, have_fused = false;
                if (only_impl.empty() || only_impl == "naive") have_naive = run_in_child({"naive", L, causal, threads}, &naive);
                if (only_impl.empty() || only_impl == "fused") have_fused = run_in_child({"fused", L, causal, threads}, &fused);
                if (have_naive && have_fused)
                    std::printf("{\"workload\":\"W6-attention\",\"ratio\":\"naive/fused\",\"L\":%lld,\"causal\":%s,"
                                "\"threads\":%d,\"time_ratio\":%.2f,\"rss_increase_ratio\":%.1f}\n",
                                static_cast<long long>(L), causal ? "true" : "false", threads,
                                naive.median_ms / fused.median_ms, naive.increase_mb / std::max(1.0, fused.increase_mb));
            }
    }
    return 0;
}
