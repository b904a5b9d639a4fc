// What the training workloads W2–W5 of docs/WORKLOADS.md share: time a
// training step (forward + backward + update) at 1 and 2 threads, each thread
// count in its own forked child process so that its peak memory is its own,
// and print one JSON line per thread count:
//
//   {"workload":"W2-seq2seq","threads":1,"median_ms":..,"steps_per_s":..,"peak_rss_mb":..,
//    "params":819760,"warmup":5,"steps":30}
//
// The model is built inside the child (make_step), after the thread count is
// set, so the parent starts no thread pool and allocates nothing of it.
// Time: 5 warm-up steps, then the median of 30 timed steps (as the PyTorch
// peer, bench/peers/w2_…w5_*.py). Peak memory is the child's VmHWM (peak
// resident set; bench/memory.hpp), which includes the program itself (~5 MB); tensor_peak_mb is
// the most tensor storage alive at once during the timed steps (the caching
// allocator's count, tensor/allocator.hpp).
//
//   build/bench/w2_seq2seq [threads]     (one thread count only, for profiling)
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/memory.hpp"
#include "tensor/allocator.hpp"
#include "tensor/parallel.hpp"

namespace attn::bench {

// What a workload hands the timer: the step, and the model's parameter count.
struct Workload {
    std::function<void()> step;
    int64_t params = 0;
};

// Builds the workload at `threads` threads, warms up, times, prints the line.
inline void run_one(const std::string& name, const std::function<Workload()>& make_step, int threads,
                    int warmup = 5, int steps = 30) {
    set_num_threads(threads);
    Workload w = make_step();
    for (int i = 0; i < warmup; ++i) w.step();
    reset_peak_live_bytes();
    std::vector<double> ms;
    for (int i = 0; i < steps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        w.step();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = steps % 2 ? ms[steps / 2] : (ms[steps / 2 - 1] + ms[steps / 2]) / 2;
    std::printf("{\"workload\":\"%s\",\"threads\":%d,\"median_ms\":%.3f,\"steps_per_s\":%.2f,\"peak_rss_mb\":%.1f,"
                "\"tensor_peak_mb\":%.1f,\"params\":%lld,\"warmup\":%d,\"steps\":%d}\n",
                name.c_str(), threads, median, 1000.0 / median, peak_rss_mb(),
                static_cast<double>(allocator_stats().peak_live_bytes) / (1 << 20), static_cast<long long>(w.params),
                warmup, steps);
    std::fflush(stdout);
}

// The whole program: argv[1] (optional) picks one thread count and runs in
// this process (for perf record); otherwise 1 and 2 threads, each in a child.
inline int main(int argc, char** argv, const std::string& name, const std::function<Workload()>& make_step) {
    if (argc > 1) {
        run_one(name, make_step, std::atoi(argv[1]));
        return 0;
    }
    int failures = 0;
    for (int threads : {1, 2}) {
        std::fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            run_one(name, make_step, threads);
            _exit(0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::printf("{\"workload\":\"%s\",\"threads\":%d,\"error\":\"the child process failed\"}\n",
                        name.c_str(), threads);
            ++failures;
        }
    }
    return failures ? 1 : 0;
}

}  // namespace attn::bench
