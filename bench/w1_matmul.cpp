// Workload W1 of shared/bench/WORKLOADS.md: SGEMM on every shape of its table,
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
// Usage: w1_matmul [--path=reference|avx2|avx512] [--shape=NAME] [--threads=N] [--no-peer]
//
// Timing: at least 5 warm-up calls, then 31 samples; a sample times a batch of
// calls lasting at least 1 ms (so a 5 µs product is not timed by a clock that
// ticks in tens of ns plus the cost of reading it), and the median sample is
// reported. Ours and OpenBLAS's samples alternate. The buffers are 64-byte
// aligned, like the framework's tensors.
#include <dlfcn.h>
#include <sys/resource.h>

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

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

// One JSON line: the median time, its GFLOP/s, and the fastest sample
// ("min_ms": on a shared machine, the closest to what the code can do alone).
void print_line(const MatmulShape& s, const char* variant, int threads, Timer& timer, const std::string& extra) {
    const double seconds = timer.median();
    const double gflops = 2.0 * s.M * s.N * s.K / seconds * 1e-9;
    std::printf("{\"workload\":\"W1-matmul\",\"shape\":\"%s\",\"variant\":\"%s\",\"threads\":%d,\"median_ms\":%.4f,"
                "\"gflops\":%.1f,\"min_ms\":%.4f,%s,\"peak_rss_mb\":%.0f}\n",
                s.name, variant, threads, seconds * 1e3, gflops, timer.fastest() * 1e3, extra.c_str(), peak_rss_mb());
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
                                        " (expected --path=reference|avx2|avx512, --shape=NAME, --threads=N, "
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

// One shape and variant at one thread count: ours and OpenBLAS's, sampled
// in turns so that both see the same machine (it is shared and noisy), then
// the ratio. At 2 threads the turns are blocks of 5 samples with a pause after
// OpenBLAS's: its workers spin for a while after each call (THREAD_TIMEOUT)
// and would take a core from ours.
void measure(const MatmulShape& s, const char* variant, int threads, GemmPath path, OpenBlas* blas,
             const Matrix& a, const Matrix& b, Matrix& c, Matrix& c_peer) {
    const bool ta = variant[0] == 'T', tb = variant[1] == 'T';
    // Stored shapes: A is K×M when transposed, B is N×K.
    const int64_t lda = ta ? s.M : s.K, ldb = tb ? s.K : s.N;
    Timer ours([&] { gemm_with(path, ta, tb, s.M, s.N, s.K, 1.0f, a.data, lda, b.data, ldb, 0.0f, c.data, s.N); });
    if (!blas) {
        for (int i = 0; i < kSamples; ++i) ours.sample();
        print_line(s, variant, threads, ours, std::string("\"path\":\"") + gemm_path_name(path) + "\"");
        return;
    }
    Timer theirs([&] {
        blas->sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, int(s.M), int(s.N), int(s.K), 1.0f,
                    a.data, int(lda), b.data, int(ldb), 0.0f, c_peer.data, int(s.N));
    });
    const int turn = threads > 1 ? 5 : 1;
    for (int done = 0; done < kSamples;) {
        const int n = std::min(turn, kSamples - done);
        for (int i = 0; i < n; ++i) ours.sample();
        for (int i = 0; i < n; ++i) theirs.sample();
        if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        done += n;
    }
    print_line(s, variant, threads, ours, std::string("\"path\":\"") + gemm_path_name(path) + "\"");
    print_line(s, variant, threads, theirs, "\"peer\":\"openblas\",\"core\":\"" + blas->core + "\"");
    std::printf("{\"workload\":\"W1-matmul\",\"shape\":\"%s\",\"variant\":\"%s\",\"threads\":%d,"
                "\"peer\":\"openblas\",\"speed_ratio\":%.3f}\n",
                s.name, variant, threads, theirs.median() / ours.median());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
    const Options opt = parse(argc, argv);
    const GemmPath path = opt.forced ? opt.path : gemm_default_path();
    if (!gemm_path_supported(path))
        throw std::runtime_error(std::string("w1_matmul: this CPU does not support the ") + gemm_path_name(path) +
                                 " path");
    OpenBlas blas;
    const bool have_peer = opt.peer && blas.load();
    if (opt.peer && !have_peer)
        std::printf("{\"workload\":\"W1-matmul\",\"peer\":\"openblas\",\"skipped\":\"libopenblas.so.0 not found "
                    "(apt-get install libopenblas0)\"}\n");

    // Every shape at 1 thread, then every shape at 2: the pool only ever grows.
    const char* variants[] = {"NN", "TN", "NT"};
    for (int threads : {1, 2}) {
        if (opt.threads != 0 && threads != opt.threads) continue;
        set_num_threads(threads);
        if (have_peer) blas.set_threads(threads);
        for (const MatmulShape& s : kShapes) {
            if (!opt.shape.empty() && opt.shape != s.name) continue;
            // 64-byte aligned, like the framework's tensors (tensor/tensor.hpp).
            Generator gen(1);
            Matrix a(s.M * s.K), b(s.K * s.N), c(s.M * s.N), c_peer(s.M * s.N);
            for (int64_t i = 0; i < s.M * s.K; ++i) a.data[i] = static_cast<float>(gen.uniform(-1, 1));
            for (int64_t i = 0; i < s.K * s.N; ++i) b.data[i] = static_cast<float>(gen.uniform(-1, 1));
            for (const char* variant : variants)
                measure(s, variant, threads, path, have_peer ? &blas : nullptr, a, b, c, c_peer);
        }
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
}
