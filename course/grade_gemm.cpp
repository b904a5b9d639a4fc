// The grade kind "gemm" (course/grade_kinds.hpp), exercise 4.1: the AVX2
// GEMM's micro-kernel (tensor/gemm/gemm_avx2.cpp), right and fast. Its
// products against the triple loop (gemm_reference) on shapes that end
// inside and on the edges of the 6×16 tile and of the cache blocks, every
// transpose, alpha and beta (beta = 0 with NaN in C: C must not be read),
// with A, B and C against unreadable pages (course/guard.hpp); then its
// speed on one core, a share of the core's AVX2 peak measured here. The
// kernels are compiled at the library's -O2 in this build too (the
// Makefile), so the times are the real ones.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/checks.hpp"
#include "course/child.hpp"
#include "course/grade_kinds.hpp"
#include "course/guard.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/parallel.hpp"
#include "tensor/random.hpp"
#include "tests/grad/catalog_checks.hpp"

using namespace attn::testing;

namespace attn::course::grading {
namespace {

struct GemmShape {
    int64_t M, N, K;
    bool ta, tb;
    float alpha, beta;
    int64_t pad = 0;  // C's rows are N + pad apart: the pad columns must stay untouched
};

const std::vector<GemmShape>& gemm_shapes() {
    static const std::vector<GemmShape> shapes = {
        {6, 16, 8, false, false, 1, 0},    {1, 1, 1, false, false, 1, 0},     {7, 17, 5, false, false, 1, 0},
        {5, 9, 3, false, false, 1, 1},     {13, 31, 19, true, false, 1, 0},   {12, 33, 40, false, true, 0.5f, 2},
        {23, 40, 300, true, true, -1, 0},  {97, 200, 257, false, false, 1, 0.5f},
        {200, 190, 70, false, true, 1, 0}, {730, 48, 33, false, false, 1, 0},
        {11, 13, 9, false, false, 1, 1, 3}, {4, 7, 2, true, true, 2, 0, 5},
    };
    return shapes;
}

// How the library lays out A and B for the kernel (gemm_internal::set_packing):
// what it chooses by their sizes, both read in place (B's last row is then the
// end of B's memory), both packed.
const gemm_internal::Packing kPackings[] = {gemm_internal::Packing::by_size, gemm_internal::Packing::never,
                                            gemm_internal::Packing::always};
const char* packing_words(gemm_internal::Packing p) {
    return p == gemm_internal::Packing::never ? "A and B read in place"
           : p == gemm_internal::Packing::always ? "A and B packed" : "packed as the library chooses";
}

// A product on one shape: its inputs drawn from `seed`, A, B and C each
// against an unreadable page on `side`, the library's packing set to
// `packing`. C's N columns, row by row; a fault, or a write into C's
// padding, as words in *problem.
std::vector<float> gemm_product(GemmPath path, const GemmShape& g, uint64_t seed, std::string* problem = nullptr,
                                attn::course::GuardedFloats::Side side = attn::course::GuardedFloats::Side::end,
                                gemm_internal::Packing packing = gemm_internal::Packing::by_size) {
    using attn::course::GuardedFloats;
    Generator gen(seed);
    const int64_t ldc = g.N + g.pad;
    GuardedFloats A(static_cast<size_t>(g.M * g.K), side), B(static_cast<size_t>(g.K * g.N), side),
        C(static_cast<size_t>(g.M * ldc), side);
    for (size_t i = 0; i < A.size(); ++i) A.data()[i] = static_cast<float>(gen.normal());
    for (size_t i = 0; i < B.size(); ++i) B.data()[i] = static_cast<float>(gen.normal());
    for (int64_t i = 0; i < g.M * ldc; ++i) {
        const float drawn = static_cast<float>(gen.normal());
        const bool padding = i % ldc >= g.N;
        C.data()[i] = padding || g.beta == 0 ? std::numeric_limits<float>::quiet_NaN() : drawn;
    }
    gemm_internal::set_packing(packing);
    const attn::course::Fault fault = attn::course::run_catching_faults([&] {
        gemm_with(path, g.ta, g.tb, g.M, g.N, g.K, g.alpha, A.data(), g.ta ? g.M : g.K, B.data(), g.tb ? g.K : g.N,
                  g.beta, C.data(), ldc);
    });
    gemm_internal::set_packing(gemm_internal::Packing::by_size);
    std::vector<float> out;
    if (fault.happened) {
        std::string whose = "memory that is not A's, B's or C's";
        for (const auto& [name, buffer] : {std::pair<const char*, const GuardedFloats*>{"A", &A}, {"B", &B}, {"C", &C}})
            if (buffer->guards(fault.address)) whose = std::string(buffer->where(fault.address)) + " of " + name;
        const int64_t edge = g.N % 16;  // the AVX2 tile is 16 columns wide
        if (problem)
            *problem = std::string("your kernel ") + (fault.write ? "wrote " : "read ") + whose + " (" +
                       packing_words(packing) + (side == GuardedFloats::Side::end ? "; each matrix ending at" :
                                                 "; each matrix starting at") + " an unreadable page)" +
                       (edge ? ": N = " + std::to_string(g.N) + " leaves an edge tile of " + std::to_string(edge) +
                                   (edge == 1 ? " column" : " columns") + ", whose loads and stores must be masked"
                             : "");
        return out;
    }
    for (int64_t i = 0; i < g.M * ldc; ++i) {
        if (i % ldc < g.N) out.push_back(C.data()[i]);
        else if (!std::isnan(C.data()[i]) && problem && problem->empty())
            *problem = "your kernel wrote into C's padding: row " + std::to_string(i / ldc) + ", column " +
                       std::to_string(i % ldc) + " (C's rows are " + std::to_string(ldc) + " apart, N is " +
                       std::to_string(g.N) + ": a store past the last column of an edge tile)";
    }
    return out;
}

std::string gemm_label(const GemmShape& g) {
    std::ostringstream os;
    os << "C = " << g.alpha << "·" << (g.ta ? "Aᵀ" : "A") << "·" << (g.tb ? "Bᵀ" : "B") << " + " << g.beta << "·C, M "
       << g.M << ", N " << g.N << ", K " << g.K;
    if (g.pad) os << ", C's rows " << g.N + g.pad << " apart";
    return os.str();
}

// "" when the kernel's products on shape g are the triple loop's under every
// packing, with the matrices against unreadable pages on either side; else
// the first thing wrong, in words.
std::string gemm_shape_problem(const GemmShape& g, uint64_t seed) {
    const std::vector<float> want = gemm_product(GemmPath::reference, g, seed);
    // float sums of K terms in another order: a few ulps per term
    const double tolerance = 1e-5 * std::sqrt(static_cast<double>(g.K));
    for (const gemm_internal::Packing packing : kPackings)
        for (const auto side : {attn::course::GuardedFloats::Side::end, attn::course::GuardedFloats::Side::start}) {
            std::string problem;
            const std::vector<float> got = gemm_product(GemmPath::avx2, g, seed, &problem, side, packing);
            if (!problem.empty()) return problem;
            int64_t wrong = 0, first = -1;
            for (size_t k = 0; k < want.size(); ++k)
                if (!(std::fabs(got[k] - want[k]) <= tolerance * (1 + std::fabs(want[k]))) && wrong++ == 0)
                    first = static_cast<int64_t>(k);
            if (wrong > 0)
                return std::to_string(wrong) + " of " + std::to_string(want.size()) + " elements wrong (" +
                       packing_words(packing) + "); first at " + index_str(Shape{g.M, g.N}, first) + ": " +
                       attn::course::expected_got(want[static_cast<size_t>(first)], got[static_cast<size_t>(first)]);
        }
    return "";
}

// Seconds per product, the best of `runs`.
double time_product(GemmPath path, int64_t n, int runs) {
    std::vector<float> A(static_cast<size_t>(n * n), 0.5f), B(A), C(A);
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const auto start = std::chrono::steady_clock::now();
        gemm_with(path, false, false, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

// The machine's AVX2 peak on one core, measured: twelve independent chains of
// 8-wide FMAs (more than two FMA units of four cycles' latency keep busy, so
// no chain waits on another), the best of `runs` (only on a CPU with AVX2
// and FMA: grade_gemm asks gemm_path_supported first). A kernel is judged by its
// share of this: the same bar on every CPU. (Judged against the triple loop
// instead, the bar moved with the loop's memory traffic and with the load of
// the machine: a tile of plain loops passed a floor of 16× at 35×, and one
// kernel measured 16× and 39× in two runs.)
#if defined(__x86_64__)
double avx2_peak_gflops(int runs) {
    // In assembly: the grader is compiled without optimisation, where the
    // chains written in intrinsics would live in memory, not in registers.
    constexpr int64_t kIterations = 60'000;  // about 0.1 ms: as short as a product, so that a busy machine interrupts either as rarely
    double best = 0;
    for (int run = 0; run < runs; ++run) {
        int64_t left = kIterations;
        const auto start = std::chrono::steady_clock::now();
        asm volatile(
            "vxorps %%ymm0, %%ymm0, %%ymm0\n\tvxorps %%ymm1, %%ymm1, %%ymm1\n\tvxorps %%ymm2, %%ymm2, %%ymm2\n\t"
            "vxorps %%ymm3, %%ymm3, %%ymm3\n\tvxorps %%ymm4, %%ymm4, %%ymm4\n\tvxorps %%ymm5, %%ymm5, %%ymm5\n\t"
            "vxorps %%ymm6, %%ymm6, %%ymm6\n\tvxorps %%ymm7, %%ymm7, %%ymm7\n\tvxorps %%ymm8, %%ymm8, %%ymm8\n\t"
            "vxorps %%ymm9, %%ymm9, %%ymm9\n\tvxorps %%ymm10, %%ymm10, %%ymm10\n\tvxorps %%ymm11, %%ymm11, %%ymm11\n\t"
            "vxorps %%ymm12, %%ymm12, %%ymm12\n\tvxorps %%ymm13, %%ymm13, %%ymm13\n"
            "1:\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm0\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm1\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm2\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm3\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm4\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm5\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm6\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm7\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm8\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm9\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm10\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm11\n\t"
            "dec %0\n\tjnz 1b\n\t"
            "vzeroupper"
            : "+r"(left)
            :
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
              "xmm12", "xmm13", "cc");
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * 8 * 12 * static_cast<double>(kIterations) / seconds / 1e9);
    }
    return best;
}
#else
double avx2_peak_gflops(int) { return 0; }
#endif

}  // namespace

void grade_gemm(Report& r, const Exercise& ex, uint64_t seed) {
    std::cout << "\nthe AVX2 micro-kernel (tensor/gemm/gemm_avx2.cpp), against the triple loop\n";
    if (!gemm_path_supported(GemmPath::avx2)) {
        r.fail("this machine", "has no AVX2 and FMA: the exercise needs an x86-64 CPU from 2013 on");
        return;
    }
    // One thread: an error the kernel throws then reaches this function (from
    // a pool worker it would end the program), and the timing is one core's.
    set_num_threads(1);
    for (size_t i = 0; i < gemm_shapes().size(); ++i) {
        const GemmShape& g = gemm_shapes()[i];
        try {
            const std::string problem = gemm_shape_problem(g, seed + i);
            if (problem.empty()) r.right(gemm_label(g), "packed and in place, against unreadable pages");
            else r.fail(gemm_label(g), problem);
        } catch (const std::exception& error) {
            r.fail(gemm_label(g), what_threw(error));
        }
    }
    // speed: the share of the machine's AVX2 peak to reach, in percent ("60%")
    const double target = ex.speed.empty() ? 0 : std::strtod(ex.speed.c_str(), nullptr);
    if (target <= 0) return;
    const int64_t n = 256;
    const double flops = 2.0 * n * n * n;
    // The peak and the kernel measured in turns, the best of each kept: a
    // moment the machine was busy slows one try, not the verdict.
    double peak = 0, yours = 1e30;
    try {
        for (int round = 0; round < 3; ++round) {
            peak = std::max(peak, avx2_peak_gflops(15));
            yours = std::min(yours, time_product(GemmPath::avx2, n, 15));
        }
    } catch (const std::exception& error) {
        r.fail("speed", what_threw(error), true);
        return;
    }
    const double gflops = flops / yours / 1e9, share = peak > 0 ? 100 * gflops / peak : 0;
    const std::string what = "speed, a 256×256×256 product on one core: at least " + num(target) +
                             "% of this core's AVX2 peak";
    const std::string measured = "yours " + num(gflops) + " GFLOP/s, " + num(share) + "% of the peak, " +
                                 num(peak) + " GFLOP/s (measured: twelve chains of FMAs)";
    if (share >= target) r.right(what, measured, /*timed=*/true);
    else r.fail(what, measured + " (docs/gemm.md: the tile held in registers, the k loop over packed panels)", true);
}

size_t gemm_shape_count() { return gemm_shapes().size(); }

std::vector<float> gemm_kernel_product(size_t shape, uint64_t seed) {
    return gemm_product(GemmPath::avx2, gemm_shapes()[shape], seed);
}

}  // namespace attn::course::grading
