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
// allocator's count, tensor/allocator.hpp). With ATTN_BENCH_CPU=N (bench/run.sh
// sets it to the last CPU) the 1-thread child runs on CPU N only, as does
// the PyTorch peer's, and its line says "cpu":N.
//
// Then 10 more steps under the profiler (tensor/profile.hpp), reported as
//
//   "profile":{"steps":10,"step_ms":..,"gemm_ms":..,"other_ms":..,"gemm_share":..,
//              "top":{"gru_gates":..,"add":..,...}}
//
// per step: the time inside the matrix products ("gemm" scopes), the rest, and
// the five ops outside them that took the most self time (ms per step, forward
// and backward together). Products done inside a fused kernel (the attention
// kernel's tiles) count in that kernel's row, not in "gemm". The profiled
// steps are not the timed ones: the median above is measured with the
// profiler off.
//
//   build/bench/w2_seq2seq [threads]     (one thread count only, for profiling)
#pragma once

#include <sched.h>
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
#include "tensor/profile.hpp"

namespace attn::bench {

// What a workload hands the timer: the step, and the model's parameter count.
struct Workload {
    std::function<void()> step;
    int64_t params = 0;
};

// Runs `steps` more steps under a profiler and returns the "profile" JSON
// object described at the top of this file.
inline std::string profile_json(Workload& w, int steps = 10) {
    Profiler profiler;
    for (int i = 0; i < steps; ++i) {
        const ProfileScope scope("step");
        w.step();
    }
    profiler.stop();
    const ProfileSummary s = profiler.summary();
    const double per_step = 1000.0 / steps;  // seconds in all -> ms per step
    const double step_ms = s.step_s * per_step, gemm_ms = s.gemm_s * per_step;
    std::string top;
    int listed = 0;
    for (const ProfileRow& row : s.rows) {  // largest self time first
        if (row.name == "gemm" || row.name == "step") continue;
        if (listed++ == 5) break;
        char item[160];
        std::snprintf(item, sizeof item, "%s\"%s\":%.3f", top.empty() ? "" : ",", row.name.c_str(),
                      row.self_s() * per_step);
        top += item;
    }
    char out[512];
    std::snprintf(out, sizeof out,
                  "{\"steps\":%d,\"step_ms\":%.3f,\"gemm_ms\":%.3f,\"other_ms\":%.3f,\"gemm_share\":%.3f,"
                  "\"gemm_gflops\":%.1f,\"top\":{",
                  steps, step_ms, gemm_ms, step_ms - gemm_ms, step_ms > 0 ? gemm_ms / step_ms : 0.0,
                  s.gemm_s > 0 ? s.gemm_flops / s.gemm_s * 1e-9 : 0.0);
    return out + top + "}}";
}

// ATTN_BENCH_CPU=N (bench/run.sh sets it): the 1-thread run on CPU N only,
// where the PyTorch peer runs its own; on the 2-core machine one vCPU ran
// single-threaded work ~25% slower than the other (docs/performance.md), so
// unpinned 1-thread ratios depended on where each process landed. Returns
// the CPU, or −1.
inline int pin_one_thread_run(int threads) {
    const char* env = std::getenv("ATTN_BENCH_CPU");
    if (threads != 1 || env == nullptr || *env == '\0') return -1;
    const int cpu = std::atoi(env);
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return -1;
    return cpu;
#else
    return -1;
#endif
}

// Builds the workload at `threads` threads, warms up, times, prints the line.
inline void run_one(const std::string& name, const std::function<Workload()>& make_step, int threads,
                    int warmup = 5, int steps = 30) {
    const int cpu = pin_one_thread_run(threads);
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
    const double rss_mb = peak_rss_mb();
    const double tensor_peak_mb = static_cast<double>(allocator_stats().peak_live_bytes) / (1 << 20);
    const std::string profile = profile_json(w);
    const std::string pinned = cpu >= 0 ? ",\"cpu\":" + std::to_string(cpu) : "";
    std::printf("{\"workload\":\"%s\",\"threads\":%d,\"median_ms\":%.3f,\"steps_per_s\":%.2f,\"peak_rss_mb\":%.1f,"
                "\"tensor_peak_mb\":%.1f,\"params\":%lld,\"warmup\":%d,\"steps\":%d%s,\"profile\":%s}\n",
                name.c_str(), threads, median, 1000.0 / median, rss_mb, tensor_peak_mb,
                static_cast<long long>(w.params), warmup, steps, pinned.c_str(), profile.c_str());
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
