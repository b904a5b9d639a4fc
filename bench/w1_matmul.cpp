// Workload W1 of docs/WORKLOADS.md: SGEMM on every shape of its table,
// as C = A·B (NN), Aᵀ·B (TN) and A·Bᵀ (NT), at 1 and 2 threads; one JSON line
// per measurement. When libopenblas can be loaded (dlopen; the library never
// links it) the same products go through its cblas_sgemm in the same run,
// with OpenBLAS's own CPU detection, and a ratio line follows each pair:
//
//   {"workload":"W1-matmul","shape":"sq512","variant":"NN","threads":1,"median_ms":..,"gflops":..,"path":"avx512",...}
//   {"workload":"W1-matmul","shape":"sq512","variant":"NN","threads":1,"median_ms":..,"gflops":..,"peer":"openblas",...}
//   {"workload":"W1-matmul","shape":"sq512","variant":"NN","threads":1,"peer":"openblas","speed_ratio":1.02}
//
// speed_ratio = our GFLOP/s / OpenBLAS's GFLOP/s (> 1: we are faster).
//
// Usage: w1_matmul [--path=reference|avx2|avx512|neon] [--shape=NAME] [--threads=N] [--no-peer]
//
// Timing: at least 5 warm-up calls, then 31 samples; a sample times a batch of
// calls lasting at least 1 ms (so a 5 µs product is not timed by a clock that
// ticks in tens of ns plus the cost of reading it), and the median sample is
// reported. Ours and OpenBLAS's samples alternate, in turns of 5; OpenBLAS's
// run in a child process (see peer_turn). The buffers are 64-byte
// aligned, like the framework's tensors.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/memory.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/parallel.hpp"
#include "tensor/random.hpp"

using namespace attn;

namespace {

struct MatmulShape {
    const char* name;
    int64_t M, K, N;
};
// The table of WORKLOADS.md, W1.
const MatmulShape kShapes[] = {
    {"sq64", 64, 64, 64},         {"sq128", 128, 128, 128},   {"sq256", 256, 256, 256},
    {"sq512", 512, 512, 512},     {"sq1024", 1024, 1024, 1024}, {"sq2048", 2048, 2048, 2048},
    {"gru-in", 1024, 64, 384},    {"gru-step", 64, 128, 384}, {"proj-out", 1024, 256, 48},
    {"attn-scores", 64, 64, 256},
};

// ---- OpenBLAS, loaded at run time -------------------------------------------
// The CBLAS enums, as in cblas.h.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
using SetThreadsFn = void (*)(int);
using CorenameFn = char* (*)();

struct OpenBlas {
    SgemmFn sgemm = nullptr;
    SetThreadsFn set_threads = nullptr;
    std::string core = "unknown";

    bool load() {
        // Let OpenBLAS detect the CPU itself: this environment forces its AVX2
        // kernels through OPENBLAS_CORETYPE, which would halve its speed.
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("OPENBLAS_L2_SIZE");
        void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return false;
        sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
        set_threads = reinterpret_cast<SetThreadsFn>(dlsym(lib, "openblas_set_num_threads"));
        if (auto corename = reinterpret_cast<CorenameFn>(dlsym(lib, "openblas_get_corename"))) core = corename();
        return sgemm && set_threads;
    }
};

// ---- timing -------------------------------------------------------------------
double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Times one function: warm-up (at least 5 calls and 20 ms), then samples of
// a batch of calls lasting at least 1 ms; median() is the median seconds per
// call over the samples taken.
class Timer {
public:
    Timer() = default;  // for samples taken elsewhere (add)
    template <class F>
    explicit Timer(F fn) : fn_(std::move(fn)) {
        const double t0 = now_seconds();
        int warm = 0;
        while (warm < 5 || now_seconds() - t0 < 0.02) {
            fn_();
            ++warm;
        }
        batch_ = std::max(1, static_cast<int>(std::ceil(1e-3 / ((now_seconds() - t0) / warm))));
    }
    void sample() {
        const double start = now_seconds();
        for (int i = 0; i < batch_; ++i) fn_();
        samples_.push_back((now_seconds() - start) / batch_);
    }
    void add(double seconds) { samples_.push_back(seconds); }
    void call() { fn_(); }  // untimed
    double last() const { return samples_.back(); }
    double median() {
        std::nth_element(samples_.begin(), samples_.begin() + samples_.size() / 2, samples_.end());
        return samples_[samples_.size() / 2];
    }
    double fastest() const { return *std::min_element(samples_.begin(), samples_.end()); }

private:
    std::function<void()> fn_;
    int batch_ = 1;
    std::vector<double> samples_;
};

constexpr int kSamples = 31;

// One JSON line: the median time, its GFLOP/s, and the fastest sample
// ("min_ms": on a shared machine, the closest to what the code can do alone).
void print_line(const MatmulShape& s, const char* variant, int threads, Timer& timer, const std::string& extra) {
    const double seconds = timer.median();
    const double gflops = 2.0 * s.M * s.N * s.K / seconds * 1e-9;
    std::printf("{\"workload\":\"W1-matmul\",\"shape\":\"%s\",\"variant\":\"%s\",\"threads\":%d,\"median_ms\":%.4f,"
                "\"gflops\":%.1f,\"min_ms\":%.4f,%s,\"peak_rss_mb\":%.0f}\n",
                s.name, variant, threads, seconds * 1e3, gflops, timer.fastest() * 1e3, extra.c_str(), bench::peak_rss_mb());
    std::fflush(stdout);
}

struct Options {
    bool forced = false;
    GemmPath path = GemmPath::reference;
    std::string shape;
    int threads = 0;  // 0: both 1 and 2
    bool peer = true;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--path=", 0) == 0) {
            o.forced = true;
            o.path = parse_gemm_path(arg.substr(7));
        } else if (arg.rfind("--shape=", 0) == 0) {
            o.shape = arg.substr(8);
        } else if (arg.rfind("--threads=", 0) == 0) {
            o.threads = std::atoi(arg.c_str() + 10);
        } else if (arg == "--no-peer") {
            o.peer = false;
        } else {
            throw std::invalid_argument("w1_matmul: unknown argument " + arg +
                                        " (expected --path=reference|avx2|avx512|neon, --shape=NAME, --threads=N, "
                                        "--no-peer)");
        }
    }
    return o;
}

// A 64-byte aligned buffer of floats.
struct Matrix {
    float* data;
    explicit Matrix(int64_t n)
        : data(static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>((n * 4 + 63) / 64 * 64)))) {
        if (!data) throw std::bad_alloc();
    }
    ~Matrix() { std::free(data); }
    Matrix(const Matrix&) = delete;
    Matrix& operator=(const Matrix&) = delete;
};

// The inputs of one shape: 64-byte aligned, like the framework's tensors
// (tensor/tensor.hpp), filled from a fixed seed (so the peer's process below
// multiplies the same numbers).
struct Inputs {
    Matrix a, b, c;
    explicit Inputs(const MatmulShape& s) : a(s.M * s.K), b(s.K * s.N), c(s.M * s.N) {
        Generator gen(1);
        for (int64_t i = 0; i < s.M * s.K; ++i) a.data[i] = static_cast<float>(gen.uniform(-1, 1));
        for (int64_t i = 0; i < s.K * s.N; ++i) b.data[i] = static_cast<float>(gen.uniform(-1, 1));
    }
};

struct Variant {
    bool ta, tb;
    int64_t lda, ldb;  // stored shapes: A is K×M when transposed, B is N×K
    Variant(const MatmulShape& s, const char* name)
        : ta(name[0] == 'T'), tb(name[1] == 'T'), lda(ta ? s.M : s.K), ldb(tb ? s.K : s.N) {}
};

// ---- the peer, in a process of its own -----------------------------------------
// OpenBLAS's worker threads spin, and sleep only after a while (its
// THREAD_TIMEOUT); sharing a process, and so the two cores, with them made our
// 2-thread samples run at one thread's speed in every order and with every
// pause we tried. So OpenBLAS never runs in this process: each turn of its
// samples is a child process (this program with --peer-turn=...), which loads
// it, warms up, takes its samples, prints them and exits, taking its threads
// with it, before our next turn starts.
//
// The child's side: prints the core OpenBLAS chose, then one sample per line.
int peer_turn(const std::string& spec) {
    char shape_name[32], variant_name[3];
    int threads = 0, n = 0;
    if (std::sscanf(spec.c_str(), "%31[^,],%2[^,],%d,%d", shape_name, variant_name, &threads, &n) != 4)
        throw std::invalid_argument("w1_matmul: --peer-turn expects SHAPE,VARIANT,THREADS,SAMPLES, got " + spec);
    const MatmulShape* s = nullptr;
    for (const MatmulShape& shape : kShapes)
        if (std::string(shape.name) == shape_name) s = &shape;
    if (!s) throw std::invalid_argument(std::string("w1_matmul: unknown shape ") + shape_name);
    OpenBlas blas;
    if (!blas.load()) return 2;
    blas.set_threads(threads);
    Inputs in(*s);
    const Variant v(*s, variant_name);
    Timer theirs([&] {
        blas.sgemm(kRowMajor, v.ta ? kTrans : kNoTrans, v.tb ? kTrans : kNoTrans, int(s->M), int(s->N), int(s->K),
                   1.0f, in.a.data, int(v.lda), in.b.data, int(v.ldb), 0.0f, in.c.data, int(s->N));
    });
    std::printf("%s\n", blas.core.c_str());
    for (int i = 0; i < n; ++i) {
        theirs.sample();
        std::printf("%.9e\n", theirs.last());
    }
    return 0;
}

// This program's file, to start it again as the peer's child: /proc/self/exe
// on Linux; where there is no /proc (macOS), argv[0], which names it as it was
// started (as a path, or a name the shell finds in PATH; we never chdir).
std::string own_path(const char* argv0) {
    char buffer[4096];
    const ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
    return length > 0 ? std::string(buffer, static_cast<size_t>(length)) : std::string(argv0);
}

// The parent's side: one turn of n samples in a child process, added to
// `theirs`; false when the child could not load OpenBLAS.
bool run_peer_turn(const std::string& self, const MatmulShape& s, const char* variant, int threads, int n,
                   Timer& theirs, std::string& core) {
    const std::string command = "'" + self + "' --peer-turn=" + s.name + "," + variant + "," +
                                std::to_string(threads) + "," + std::to_string(n);
    FILE* child = popen(command.c_str(), "r");
    if (!child) throw std::runtime_error("w1_matmul: cannot start " + command);
    char line[256];
    int got = 0;
    if (std::fgets(line, sizeof line, child)) {
        core = std::string(line, std::strcspn(line, "\n"));
        while (std::fgets(line, sizeof line, child)) {
            theirs.add(std::strtod(line, nullptr));
            ++got;
        }
    }
    const int status = pclose(child);
    if (status != 0 && got == 0) return false;
    if (status != 0 || got != n) throw std::runtime_error("w1_matmul: " + command + " failed");
    return true;
}

// Before each of our turns after the first: 20 ms of untimed calls, as the
// peer's process warms up for 20 ms before its samples. This machine is a VM,
// and a virtual CPU left idle while the peer's process ran and exited comes
// back slowly: our pool's worker, woken on it, ran at a fraction of a core for
// many milliseconds, and our 2-thread samples came out at one thread's speed
// (docs/gemm.md §9). Working through the gap brings it back.
void settle(Timer& ours) {
    const double start = now_seconds();
    while (now_seconds() - start < 0.02) ours.call();
}

// One shape and variant at one thread count: ours and OpenBLAS's, sampled in
// alternate turns of 5 (ours here, theirs in a child process) so that both see
// the same machine (it is shared and noisy), then the ratio. `self` is this
// program's path, empty when there is no peer.
void measure(const MatmulShape& s, const char* variant, int threads, GemmPath path, const std::string& self,
             Inputs& in) {
    const Variant v(s, variant);
    Timer ours([&] {
        gemm_with(path, v.ta, v.tb, s.M, s.N, s.K, 1.0f, in.a.data, v.lda, in.b.data, v.ldb, 0.0f, in.c.data, s.N);
    });
    const std::string our_path = std::string("\"path\":\"") + gemm_path_name(path) + "\"";
    if (self.empty()) {
        for (int i = 0; i < kSamples; ++i) ours.sample();
        print_line(s, variant, threads, ours, our_path);
        return;
    }
    Timer theirs;
    std::string core = "unknown";
    constexpr int turn = 5;
    for (int done = 0; done < kSamples; done += turn) {
        const int n = std::min(turn, kSamples - done);
        if (done > 0) settle(ours);
        for (int i = 0; i < n; ++i) ours.sample();
        if (!run_peer_turn(self, s, variant, threads, n, theirs, core))
            throw std::runtime_error("w1_matmul: the peer process could not load libopenblas.so.0");
    }
    print_line(s, variant, threads, ours, our_path);
    print_line(s, variant, threads, theirs, "\"peer\":\"openblas\",\"core\":\"" + core + "\"");
    std::printf("{\"workload\":\"W1-matmul\",\"shape\":\"%s\",\"variant\":\"%s\",\"threads\":%d,"
                "\"peer\":\"openblas\",\"speed_ratio\":%.3f}\n",
                s.name, variant, threads, theirs.median() / ours.median());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
    if (argc == 2 && std::strncmp(argv[1], "--peer-turn=", 12) == 0) return peer_turn(argv[1] + 12);
    const Options opt = parse(argc, argv);
    const GemmPath path = opt.forced ? opt.path : gemm_default_path();
    if (!gemm_path_supported(path))
        throw std::runtime_error(std::string("w1_matmul: this CPU does not support the ") + gemm_path_name(path) +
                                 " path");
    // The peer runs in child processes (above); a first one says whether OpenBLAS loads at all.
    std::string self;
    if (opt.peer) {
        const std::string program = own_path(argv[0]);
        Timer probe;
        std::string core;
        if (run_peer_turn(program, kShapes[0], "NN", 1, 1, probe, core))
            self = program;
        else
            std::printf("{\"workload\":\"W1-matmul\",\"peer\":\"openblas\",\"skipped\":\"libopenblas.so.0 not "
                        "found (apt-get install libopenblas0)\"}\n");
    }

    // Every shape at 1 thread, then every shape at 2: the pool only ever grows.
    const char* variants[] = {"NN", "TN", "NT"};
    for (int threads : {1, 2}) {
        if (opt.threads != 0 && threads != opt.threads) continue;
        set_num_threads(threads);
        for (const MatmulShape& s : kShapes) {
            if (!opt.shape.empty() && opt.shape != s.name) continue;
            Inputs in(s);
            for (const char* variant : variants) measure(s, variant, threads, path, self, in);
        }
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
}
