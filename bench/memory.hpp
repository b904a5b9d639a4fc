// How much memory the benchmark's process holds, for the "peak_rss_mb" of its
// JSON lines: the resident set, from /proc/self/status on Linux; where there
// is no /proc (macOS, the BSDs), from getrusage, which knows only the peak.
#pragma once

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace attn::bench {

// A field of /proc/self/status in MiB ("VmRSS", "VmHWM"); -1 without /proc.
inline double proc_status_mb(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field, 0) == 0) return std::atof(line.c_str() + std::strlen(field) + 1) / 1024.0;
    return -1;
}

// The peak resident set so far, from getrusage: ru_maxrss is in bytes on
// macOS, in KiB on Linux and the BSDs.
inline double rusage_peak_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
#if defined(__APPLE__)
    return static_cast<double>(usage.ru_maxrss) / (1 << 20);
#else
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
#endif
}

// The peak resident set of this process so far, in MiB (VmHWM).
inline double peak_rss_mb() {
    const double mb = proc_status_mb("VmHWM");
    return mb >= 0 ? mb : rusage_peak_mb();
}

// The resident set now, in MiB (VmRSS). Without /proc, the peak so far: read
// early in a fresh process, before it allocates, as the benchmarks do, the
// two are about the same.
inline double current_rss_mb() {
    const double mb = proc_status_mb("VmRSS");
    return mb >= 0 ? mb : rusage_peak_mb();
}

}  // namespace attn::bench
