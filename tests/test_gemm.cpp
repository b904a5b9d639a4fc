// Tests of tensor/gemm/: every path this CPU supports against gemm_reference,
// on shapes chosen to cross every block boundary of every kernel (MR, NR, KC,
// NC, MC, each just below, at and above), all four transpose combinations,
// alpha/beta (beta = 0 over a C full of NaN), leading dimensions wider than
// the rows with sentinels in the gaps, packed and in-place operands, 1 and 2
// threads, the batched form, the double version, and the choice of path.
// Products of 4M multiply-adds or more are split over the pool's threads;
// from 256K they are split when the workers are awake (see gemm.cpp).
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tensor/gemm/gemm.hpp"
#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/parallel.hpp"
#include "tensor/random.hpp"

using namespace attn;
using gemm_internal::Packing;

namespace {

constexpr float kSentinel = -12345.0f;  // in the gaps between rows of C
const float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Case {
    bool ta, tb;
    int64_t M, N, K;
    float alpha, beta;
    int64_t pad;  // extra elements at the end of every row of A, B and C
};

std::string describe(const Case& c) {
    return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " M=" + std::to_string(c.M) +
           " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) + " alpha=" + std::to_string(c.alpha) +
           " beta=" + std::to_string(c.beta) + " pad=" + std::to_string(c.pad);
}

// Rows × cols with leading dimension cols + pad: random values, NaN in the
// gaps (a kernel that read them would spread NaN into C).
std::vector<float> matrix(int64_t rows, int64_t cols, int64_t pad, Generator& gen) {
    std::vector<float> m(static_cast<size_t>(rows * (cols + pad)), kNaN);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) m[r * (cols + pad) + c] = static_cast<float>(gen.uniform(-1, 1));
    return m;
}

// An implicit B (gemm.hpp) for the tests: a stored op(B), packed on demand by
// a plain loop written from gemm.hpp's description of the layout, not by the
// GEMM's own packing. Counts requests outside the K×N matrix.
struct StoredB {
    const float* data;
    bool trans;
    int64_t ld, K, N;
    mutable std::atomic<int> out_of_range{0};
};
void pack_stored(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, float* dest) {
    const auto& s = *static_cast<const StoredB*>(ctx);
    if (k0 < 0 || j0 < 0 || kc <= 0 || nc <= 0 || nr <= 0 || k0 + kc > s.K || j0 + nc > s.N) {
        ++s.out_of_range;
        return;
    }
    for (int64_t q = 0; q * nr < nc; ++q)
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < nr; ++j) {
                const int64_t row = k0 + k, col = j0 + q * nr + j;
                float b = 0.0f;  // (past nc: zero, and nothing read)
                if (q * nr + j < nc) b = s.trans ? s.data[col * s.ld + row] : s.data[row * s.ld + col];
                dest[q * nr * kc + k * nr + j] = b;
            }
}

// Runs one case on `path` and on the reference and compares them element by
// element. With `implicit`, the path multiplies by B given as an implicit
// operand (gemm_implicit_b_with, pack_stored) instead of stored. Two float sums of the same K products, accumulated in different
// orders, each differ from the exact sum by at most γ_K·Σ_k|a_ik·b_kj| with
// γ_K ≈ K·2⁻²⁴ (Higham, Accuracy and Stability, §3.1); alpha and beta add a
// few roundings more. So the two may differ by 2·(K + 3)·2⁻²⁴ times
// |alpha|·Σ|a||b| + |beta|·|c|: a bound, not a guess, hence never flaky, and
// far below the error of a wrong or missing term.
void check_case(GemmPath path, const Case& c, uint64_t seed, bool implicit = false) {
    INFO(std::string(gemm_path_name(path)) << " " << describe(c) << " threads=" << num_threads()
                                           << (implicit ? " implicit B" : ""));
    Generator gen(seed);
    const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
    const int64_t b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
    const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.N + c.pad;
    const std::vector<float> A = matrix(a_rows, a_cols, c.pad, gen), B = matrix(b_rows, b_cols, c.pad, gen);
    std::vector<float> C0 = matrix(c.M, c.N, c.pad, gen);
    for (int64_t i = 0; i < c.M; ++i) {
        for (int64_t j = c.N; j < ldc; ++j) C0[i * ldc + j] = kSentinel;
        if (c.beta == 0.0f)
            for (int64_t j = 0; j < c.N; ++j) C0[i * ldc + j] = kNaN;  // must be overwritten unread
    }
    std::vector<float> got = C0, want = C0;
    if (implicit) {
        const StoredB stored{B.data(), c.tb, ldb, c.K, c.N};
        gemm_implicit_b_with(path, c.ta, c.M, c.N, c.K, c.alpha, A.data(), lda, ImplicitB<float>{&pack_stored, &stored},
                             c.beta, got.data(), ldc);
        CHECK(stored.out_of_range == 0);
    } else {
        gemm_with(path, c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, got.data(), ldc);
    }
    gemm_with(GemmPath::reference, c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta,
              want.data(), ldc);

    const double u = std::ldexp(1.0, -24);
    int64_t failures = 0;
    for (int64_t i = 0; i < c.M && failures < 3; ++i) {
        for (int64_t j = c.N; j < ldc; ++j)
            if (std::memcmp(&got[i * ldc + j], &kSentinel, sizeof(float)) != 0) {
                FAIL_CHECK("row " << i << ": the gap after the row was written at column " << j);
                ++failures;
            }
        for (int64_t j = 0; j < c.N; ++j) {
            double magnitude = c.beta == 0.0f ? 0.0 : std::fabs(c.beta * C0[i * ldc + j]);
            for (int64_t k = 0; k < c.K; ++k) {
                const float a = c.ta ? A[k * lda + i] : A[i * lda + k];
                const float b = c.tb ? B[j * ldb + k] : B[k * ldb + j];
                magnitude += std::fabs(c.alpha) * std::fabs(a * b);
            }
            const double tol = 2.0 * (c.K + 3) * u * magnitude + 1e-30;
            const float g = got[i * ldc + j], w = want[i * ldc + j];
            if (!(std::fabs(double(g) - w) <= tol)) {
                FAIL_CHECK("C[" << i << "][" << j << "] = " << g << ", reference " << w << ", tolerance " << tol);
                if (++failures == 3) break;
            }
        }
    }
}

// Every SIMD path this CPU runs: AVX2 and AVX-512 on x86-64, NEON on aarch64.
std::vector<GemmPath> fast_paths() {
    std::vector<GemmPath> paths;
    for (GemmPath p : {GemmPath::avx2, GemmPath::avx512, GemmPath::neon})
        if (gemm_path_supported(p)) paths.push_back(p);
    return paths;
}

// Restores the default packing when a test ends, even by a failed REQUIRE.
struct RestorePacking {
    ~RestorePacking() { gemm_internal::set_packing(Packing::by_size); }
};

// At least two threads in the pool. (The tests never shrink the pool: one
// thread is what every product below gemm's threshold of 4M multiply-adds
// runs on, whatever the pool size, and the single-thread kernel is called
// directly where bits are compared.)
void at_least_two_threads() {
    if (num_threads() < 2) set_num_threads(2);
}

// What one thread computes: the path's kernel, called directly.
void one_thread([[maybe_unused]] GemmPath path, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                float* C) {
    [[maybe_unused]] const gemm_internal::Product p{M, N, K, 1.0f, {A, K, 1}, {B, N, 1}, 0.0f, C, N};
#if defined(__x86_64__)  // each kernel is built for its own architecture only
    if (path == GemmPath::avx512) gemm_internal::product_avx512(p);
    if (path == GemmPath::avx2) gemm_internal::product_avx2(p);
#elif defined(__aarch64__)
    if (path == GemmPath::neon) gemm_internal::product_neon(p);
#endif
}

// Sizes around every block boundary of every kernel: MR (6, 8), NR (12, 16,
// 32), KC (256, 384), NC (192, 384, 512), MC (720, 768, 1024); one dimension
// large at a time so the reference stays quick. The N below 48 end in every
// kind of last tile: 1, 2 or 3 whole vectors, or a partial vector after 0, 1
// or 2 whole ones, for vectors of 4, 8 and 16 floats.
const std::vector<std::array<int64_t, 3>> kShapes = {
    {1, 1, 1},     {2, 3, 5},     {7, 11, 13},   {5, 15, 3},   {6, 16, 8},    {7, 17, 9},    {8, 31, 1},
    {9, 32, 2},    {13, 33, 17},  {17, 47, 29},  {31, 48, 37}, {64, 64, 64},  {67, 61, 71},  {3, 5, 255},
    {9, 17, 256},  {6, 33, 257},  {8, 31, 383},  {5, 32, 384}, {7, 65, 385},  {2, 191, 4},   {3, 192, 6},
    {1, 193, 9},   {3, 383, 5},   {4, 384, 3},   {2, 385, 4},  {4, 511, 3},   {9, 512, 2},   {2, 513, 5},
    {719, 3, 4},   {720, 2, 3},   {721, 5, 2},   {767, 3, 2},  {768, 2, 3},   {769, 4, 2},   {11, 22, 7},
    {12, 24, 6},   {15, 36, 10},
    {1023, 3, 2},  {1024, 2, 1},  {1025, 1, 3},  {40, 100, 800}, {100, 40, 300}, {129, 200, 70},
};

}  // namespace

TEST_CASE("gemm: every path matches the reference on block-boundary shapes, all transposes") {
#if defined(__aarch64__)
    REQUIRE(fast_paths() == std::vector<GemmPath>{GemmPath::neon});  // every aarch64 CPU has NEON
#endif
    RestorePacking restore;
    uint64_t seed = 1;
    for (GemmPath path : fast_paths())
        for (Packing packing : {Packing::by_size, Packing::always, Packing::never}) {
            gemm_internal::set_packing(packing);
            for (const auto& s : kShapes)
                for (int t = 0; t < 4; ++t)
                    check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], 1, 0, 0}, ++seed);
        }
}

TEST_CASE("gemm: one-column and one-row products (the GEMV path) match the reference") {
    uint64_t seed = 500;
    const int64_t shapes[][3] = {{37, 1, 29}, {1, 41, 23}, {64, 1, 256}, {1, 256, 1024}, {1, 1, 5}, {5, 1, 1},
                                 {1, 9, 1}, {200, 1, 7}, {3, 1, 33}};
    for (GemmPath path : fast_paths())
        for (const auto& s : shapes)
            for (int t = 0; t < 4; ++t) {
                check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], 1, 0, 0}, ++seed);
                check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], -0.5f, 2, 3}, ++seed);
            }
}

TEST_CASE("gemm: alpha, beta and leading dimensions with gaps") {
    RestorePacking restore;
    const float scalars[][2] = {{1, 0}, {1, 1}, {-0.5f, 0}, {2, -1.5f}, {0.25f, 0.75f}};
    uint64_t seed = 100;
    for (GemmPath path : fast_paths())
        for (Packing packing : {Packing::always, Packing::never}) {
            gemm_internal::set_packing(packing);
            for (const auto& ab : scalars)
                for (const auto& s : {std::array<int64_t, 3>{5, 7, 3}, {8, 32, 16}, {13, 45, 390}, {70, 35, 9}})
                    for (int t = 0; t < 4; ++t)
                        check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], ab[0], ab[1], 3}, ++seed);
        }
}

TEST_CASE("gemm: two threads give the reference's values and the same bits as one") {
    at_least_two_threads();
    uint64_t seed = 500;
    for (GemmPath path : fast_paths())
        for (const auto& s : {std::array<int64_t, 3>{300, 200, 100}, {50, 700, 150}, {1030, 40, 120}}) {
            // Large enough (> 4M multiply-adds) to be split over the threads,
            // by rows for the first and last shape, by columns for the second.
            for (int t = 0; t < 4; ++t)
                check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], 1.5f, 0.5f, 1}, ++seed);
            // Bit-identical to one thread: every element of C gets the same
            // FMAs in the same order whichever thread computes it.
            Generator gen(seed);
            const int64_t M = s[0], N = s[1], K = s[2];
            const std::vector<float> A = matrix(M, K, 0, gen), B = matrix(K, N, 0, gen);
            std::vector<float> single(static_cast<size_t>(M * N)), split = single, again = single;
            one_thread(path, M, N, K, A.data(), B.data(), single.data());
            gemm_with(path, false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, split.data(), N);
            gemm_with(path, false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, again.data(), N);
            INFO(std::string(gemm_path_name(path)) << " " << M << "×" << K << "×" << N);
            CHECK(std::memcmp(split.data(), again.data(), single.size() * sizeof(float)) == 0);
            CHECK(std::memcmp(single.data(), split.data(), single.size() * sizeof(float)) == 0);
        }
}

TEST_CASE("gemm: a product split because the workers are awake gives the bits of one thread, all transposes") {
    at_least_two_threads();
    uint64_t seed = 900;
    for (GemmPath path : fast_paths())
        // 256K to 4M multiply-adds: split only when the workers are awake. By
        // rows (64³, 70×45×100 with partial tiles) and by columns (gru-step).
        for (const auto& s : {std::array<int64_t, 3>{64, 64, 64}, {70, 45, 100}, {64, 384, 128}}) {
            const int64_t M = s[0], N = s[1], K = s[2];
            Generator gen(++seed);
            const std::vector<float> A = matrix(M, K, 0, gen), B = matrix(K, N, 0, gen);
            std::vector<float> At(A.size()), Bt(B.size());  // the same matrices stored transposed
            for (int64_t i = 0; i < M; ++i)
                for (int64_t k = 0; k < K; ++k) At[k * M + i] = A[i * K + k];
            for (int64_t k = 0; k < K; ++k)
                for (int64_t j = 0; j < N; ++j) Bt[j * K + k] = B[k * N + j];
            std::vector<float> single(static_cast<size_t>(M * N));
            one_thread(path, M, N, K, A.data(), B.data(), single.data());
            for (int t = 0; t < 4; ++t) {
                const bool ta = t & 1, tb = t & 2;
                std::vector<float> split(single.size(), kNaN);
                // Wake the workers, so that gemm finds them spinning and splits.
                pool_rouse_workers();
                const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                bool awake = pool_workers_awake();
                while (!awake && std::chrono::steady_clock::now() < limit) {
                    std::this_thread::yield();
                    pool_rouse_workers();  // again: the yield may have outlasted their spin
                    awake = pool_workers_awake();
                }
                CHECK(awake);  // else this case would not reach the split at all
                gemm_with(path, ta, tb, M, N, K, 1, ta ? At.data() : A.data(), ta ? M : K, tb ? Bt.data() : B.data(),
                          tb ? K : N, 0, split.data(), N);
                INFO(std::string(gemm_path_name(path)) << " " << (ta ? "T" : "N") << (tb ? "T" : "N") << " " << M
                                                       << "×" << K << "×" << N);
                // Each element of C gets the same FMAs in the same k order
                // whichever thread computes it and however A and B are laid out.
                CHECK(std::memcmp(single.data(), split.data(), single.size() * sizeof(float)) == 0);
            }
        }
}

TEST_CASE("gemm_implicit_b: B packed on demand gives the stored B's product, every path, A packed or in place") {
    RestorePacking restore;
    uint64_t seed = 2000;
    std::vector<GemmPath> paths = fast_paths();
    paths.push_back(GemmPath::reference);  // (it stores the implicit B first)
    for (GemmPath path : paths)
        for (Packing packing : {Packing::by_size, Packing::always, Packing::never}) {
            gemm_internal::set_packing(packing);
            for (const auto& s : kShapes)
                for (int t = 0; t < 4; ++t)  // tb: how the packer's source is stored
                    check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], 1, 0, 0}, ++seed, true);
            for (const auto& s : {std::array<int64_t, 3>{1, 40, 7}, {37, 1, 29}, {13, 45, 390}})  // (no GEMV shortcut)
                for (int t = 0; t < 4; ++t)
                    check_case(path, {bool(t & 1), bool(t & 2), s[0], s[1], s[2], -0.5f, 2, 3}, ++seed, true);
        }
}

TEST_CASE("gemm_implicit_b: split over two threads, by rows and by columns, the bits of a stored B") {
    at_least_two_threads();
    RestorePacking restore;
    gemm_internal::set_packing(Packing::always);  // the stored B packed too: the same numbers in the same order
    uint64_t seed = 2500;
    std::vector<GemmPath> paths = fast_paths();
    paths.push_back(GemmPath::reference);  // (split too: each piece stores its own columns of B)
    for (GemmPath path : paths)
        // > 4M multiply-adds: split by rows (first, last) or by columns
        // (second: each thread's packer starts at its own column).
        for (const auto& s : {std::array<int64_t, 3>{300, 200, 100}, {50, 700, 150}, {1030, 40, 120}}) {
            for (int t = 0; t < 2; ++t) check_case(path, {bool(t & 1), false, s[0], s[1], s[2], 1.5f, 0.5f, 1}, ++seed, true);
            Generator gen(seed);
            const int64_t M = s[0], N = s[1], K = s[2];
            const std::vector<float> A = matrix(M, K, 0, gen), B = matrix(K, N, 0, gen);
            std::vector<float> stored_b(static_cast<size_t>(M * N)), implicit_b(stored_b.size(), kNaN);
            gemm_with(path, false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, stored_b.data(), N);
            const StoredB source{B.data(), false, N, K, N};
            gemm_implicit_b_with(path, false, M, N, K, 1, A.data(), K, ImplicitB<float>{&pack_stored, &source}, 0,
                                 implicit_b.data(), N);
            INFO(std::string(gemm_path_name(path)) << " " << M << "×" << K << "×" << N);
            CHECK(source.out_of_range == 0);
            CHECK(std::memcmp(stored_b.data(), implicit_b.data(), stored_b.size() * sizeof(float)) == 0);
        }
}

TEST_CASE("gemm_implicit_b: the double version stores B and matches the stored product") {
    struct StoredD {
        const double* data;
        int64_t N;
    };
    auto pack = [](const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, double* dest) {
        const auto& s = *static_cast<const StoredD*>(ctx);
        for (int64_t q = 0; q * nr < nc; ++q)
            for (int64_t k = 0; k < kc; ++k)
                for (int64_t j = 0; j < nr; ++j)
                    dest[q * nr * kc + k * nr + j] = q * nr + j < nc ? s.data[(k0 + k) * s.N + j0 + q * nr + j] : 0.0;
    };
    const int64_t M = 7, N = 11, K = 5;
    std::vector<double> A(M * K), B(K * N), C1(M * N, 1.0), C2(M * N, 1.0);
    for (size_t i = 0; i < A.size(); ++i) A[i] = std::sin(double(i));
    for (size_t i = 0; i < B.size(); ++i) B[i] = std::cos(double(i));
    const StoredD source{B.data(), N};
    for (bool ta : {false, true}) {
        gemm(ta, false, M, N, K, 0.5, A.data(), ta ? M : K, B.data(), N, 2.0, C1.data(), N);
        gemm_implicit_b(ta, M, N, K, 0.5, A.data(), ta ? M : K, ImplicitB<double>{pack, &source}, 2.0, C2.data(), N);
        CHECK(C1 == C2);
    }
}

TEST_CASE("gemm: K = 0 scales C by beta; empty M or N touch nothing") {
    for (GemmPath path : fast_paths()) {
        std::vector<float> c = {1, 2, 3, 4};
        const float dummy = 0;
        gemm_with(path, false, false, 2, 2, 0, 1, &dummy, 1, &dummy, 2, 0.5f, c.data(), 2);
        CHECK(c == std::vector<float>{0.5f, 1, 1.5f, 2});
        c.assign(4, kNaN);
        gemm_with(path, false, false, 2, 2, 0, 1, &dummy, 1, &dummy, 2, 0, c.data(), 2);
        CHECK(c == std::vector<float>{0, 0, 0, 0});
        gemm_with(path, false, false, 0, 2, 3, 1, &dummy, 3, &dummy, 2, 0, c.data(), 2);
        CHECK(c == std::vector<float>{0, 0, 0, 0});
    }
}

TEST_CASE("gemm_batched: stride 0 broadcasts an operand, and accumulates into one C") {
    at_least_two_threads();  // small products are spread over the pool, one per task
    Generator gen(7);
    const int64_t batch = 5, M = 9, N = 20, K = 11;
    const std::vector<float> A = matrix(M, K, 0, gen), B = matrix(batch * K, N, 0, gen);
    std::vector<float> C(static_cast<size_t>(batch * M * N), kNaN), want(C.size());
    gemm_batched(false, false, batch, M, N, K, 1, A.data(), K, 0, B.data(), N, K * N, 0, C.data(), N, M * N);
    for (int64_t b = 0; b < batch; ++b)
        gemm_with(GemmPath::reference, false, false, M, N, K, 1, A.data(), K, B.data() + b * K * N, N, 0,
                  want.data() + b * M * N, N);
    for (size_t i = 0; i < C.size(); ++i) REQUIRE(std::fabs(C[i] - want[i]) <= 1e-5f);

    // stride_c = 0 with beta = 1: C = Σ_b A·B_b + C, the products in order.
    std::vector<float> sum(static_cast<size_t>(M * N), 1.0f), expect = sum;
    gemm_batched(false, false, batch, M, N, K, 1, A.data(), K, 0, B.data(), N, K * N, 1, sum.data(), N, 0);
    for (int64_t b = 0; b < batch; ++b)
        gemm_with(GemmPath::reference, false, false, M, N, K, 1, A.data(), K, B.data() + b * K * N, N, 1,
                  expect.data(), N);
    for (size_t i = 0; i < sum.size(); ++i) REQUIRE(std::fabs(sum[i] - expect[i]) <= 1e-4f);
}

TEST_CASE("gemm: the double version matches its definition") {
    Generator gen(3);
    for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        const int64_t M = 37, N = 150, K = 300;  // K crosses the 128-row block
        std::vector<double> A(M * K), B(K * N), C(M * N), want(M * N);
        for (double& x : A) x = gen.uniform(-1, 1);
        for (double& x : B) x = gen.uniform(-1, 1);
        for (size_t i = 0; i < C.size(); ++i) C[i] = want[i] = gen.uniform(-1, 1);
        gemm(ta, tb, M, N, K, 0.5, A.data(), ta ? M : K, B.data(), tb ? K : N, 2.0, C.data(), N);
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k)
                    s += (ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
                want[i * N + j] = 0.5 * s + 2.0 * want[i * N + j];
            }
        for (size_t i = 0; i < C.size(); ++i) REQUIRE(std::fabs(C[i] - want[i]) <= 1e-12);
    }
}

TEST_CASE("gemm: choosing a path (ATTN_GEMM)") {
    using gemm_internal::choose_path;
    CHECK(parse_gemm_path("reference") == GemmPath::reference);
    CHECK(parse_gemm_path("avx2") == GemmPath::avx2);
    CHECK(parse_gemm_path("avx512") == GemmPath::avx512);
    CHECK(parse_gemm_path("neon") == GemmPath::neon);
    CHECK_THROWS_WITH_AS(parse_gemm_path("AVX2"), "ATTN_GEMM=AVX2: expected reference, avx2, avx512 or neon",
                         std::invalid_argument);
    CHECK_THROWS_AS(parse_gemm_path(""), std::invalid_argument);
    for (GemmPath p : {GemmPath::reference, GemmPath::avx2, GemmPath::avx512, GemmPath::neon})
        CHECK(parse_gemm_path(gemm_path_name(p)) == p);

    const gemm_internal::CpuFeatures none{}, avx2{true, false}, avx512{true, true}, neon{false, false, true};
    CHECK(choose_path(nullptr, none) == GemmPath::reference);
    CHECK(choose_path(nullptr, avx2) == GemmPath::avx2);
    CHECK(choose_path(nullptr, avx512) == GemmPath::avx512);
    CHECK(choose_path(nullptr, neon) == GemmPath::neon);
    CHECK(choose_path("reference", neon) == GemmPath::reference);
    CHECK_THROWS_AS(choose_path("neon", avx512), std::runtime_error);
    CHECK_THROWS_AS(choose_path("avx2", neon), std::runtime_error);
    CHECK(choose_path("reference", avx512) == GemmPath::reference);
    CHECK(choose_path("avx2", avx512) == GemmPath::avx2);
    CHECK_THROWS_WITH_AS(choose_path("avx512", avx2),
                         "ATTN_GEMM=avx512: this CPU does not support the avx512 GEMM path", std::runtime_error);
    CHECK_THROWS_AS(choose_path("avx2", none), std::runtime_error);
    CHECK_THROWS_AS(choose_path("fast", avx512), std::invalid_argument);

    // The default path is supported, and an unsupported one is refused.
    CHECK(gemm_path_supported(gemm_default_path()));
    CHECK(gemm_path_supported(GemmPath::reference));
    float x = 1, y = 1, z = 0;
    for (GemmPath p : {GemmPath::avx2, GemmPath::avx512, GemmPath::neon})
        if (!gemm_path_supported(p))
            CHECK_THROWS_AS(gemm_with(p, false, false, 1, 1, 1, 1, &x, 1, &y, 1, 0, &z, 1), std::runtime_error);
}

TEST_CASE("gemm: bad sizes and leading dimensions name the problem") {
    float x = 0;
    CHECK_THROWS_AS(gemm(false, false, -1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &x, 1), std::invalid_argument);
    CHECK_THROWS_WITH_AS(gemm(false, false, 2, 3, 4, 1.0f, &x, 3, &x, 3, 0.0f, &x, 3),
                         "gemm: leading dimensions lda=3 ldb=3 ldc=3 are shorter than the rows they stride over "
                         "(4, 3, 3)",
                         std::invalid_argument);
    CHECK_THROWS_AS(gemm(false, false, 1, 1, 1, 1.0f, &x, -1, &x, 1, 0.0f, &x, 1), std::invalid_argument);
}

TEST_CASE("gemm: empty products — no rows, no columns, or an empty sum (K = 0) giving beta·C") {
    // An empty sequence (n = 0 keys) makes products with a zero size and a
    // leading dimension of 0; they must neither throw nor touch memory they
    // do not own, and K = 0 leaves beta·C (beta = 0 overwrites, NaN included).
    float dummy = 1;
    for (GemmPath p : {GemmPath::reference, GemmPath::avx2, GemmPath::avx512, GemmPath::neon}) {
        if (!gemm_path_supported(p)) continue;
        CAPTURE(static_cast<int>(p));
        CHECK_NOTHROW(gemm_with(p, false, false, 0, 4, 3, 1, &dummy, 3, &dummy, 4, 0, &dummy, 4));
        CHECK_NOTHROW(gemm_with(p, false, false, 3, 0, 4, 1, &dummy, 4, &dummy, 0, 0, &dummy, 0));
        CHECK(dummy == 1);
        std::vector<float> C = {std::nanf(""), 2, 3, 4, 5, 6};
        gemm_with(p, false, false, 2, 3, 0, 1, &dummy, 0, &dummy, 3, 0, C.data(), 3);
        CHECK(C == std::vector<float>(6, 0));
        C = {1, 2, 3, 4, 5, 6};
        gemm_with(p, true, false, 2, 3, 0, 1, &dummy, 2, &dummy, 3, 0.5f, C.data(), 3);
        CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3});
    }
}
