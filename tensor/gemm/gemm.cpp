// The GEMM entry points: the reference loop (the definition), the run-time
// choice of kernel, the split of large products over the thread pool, the
// batched form and the double-precision version. The fast kernels live in
// gemm_avx2.cpp, gemm_avx512.cpp and gemm_neon.cpp; docs/gemm.md explains how
// they work.
#include "tensor/gemm/gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {
namespace {

using gemm_internal::Product;
using gemm_internal::View;

// C = alpha·op(A)·op(B) + beta·C, the definition, one dot product per entry:
//
//     C[i][j] = alpha · Σ_k op(A)[i][k] · op(B)[k][j] + beta · C[i][j]
//
// Every faster path is tested against this loop.
template <class T>
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                    const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            T acc = 0;
            for (int64_t k = 0; k < K; ++k) {
                const T a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const T b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                acc += a * b;
            }
            T& c = C[i * ldc + j];
            c = beta == T(0) ? alpha * acc : alpha * acc + beta * c;
        }
    }
}

// The double-precision GEMM, for the gradient-check build: the same sum,
// reordered for the cache. For each row i of C, rows k of op(B) are added in
// with weight alpha·op(A)[i][k], so the innermost loop runs along contiguous
// rows of C and of op(B). Blocks of KB rows of op(B) (KB·N·8 bytes) stay in
// cache while all rows of C use them. With op(B) = Bᵀ, each block is first
// transposed into a scratch buffer so the inner loop stays contiguous.
void gemm_double_rows(bool trans_a, bool trans_b, int64_t i0, int64_t i1, int64_t N, int64_t K, double alpha,
                      const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
                      int64_t ldc) {
    constexpr int64_t KB = 128;
    for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0 ? 0.0 : beta * C[i * ldc + j];
    std::vector<double> block;
    for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t kb = std::min(KB, K - k0);
        const double* rows = B + k0 * ldb;  // row k of the block starts at rows + k·rows_ld
        int64_t rows_ld = ldb;
        if (trans_b) {
            block.resize(static_cast<size_t>(kb * N));
            for (int64_t j = 0; j < N; ++j)
                for (int64_t k = 0; k < kb; ++k) block[k * N + j] = B[j * ldb + k0 + k];
            rows = block.data();
            rows_ld = N;
        }
        for (int64_t i = i0; i < i1; ++i) {
            double* c = C + i * ldc;
            for (int64_t k = 0; k < kb; ++k) {
                const double a = alpha * (trans_a ? A[(k0 + k) * lda + i] : A[i * lda + k0 + k]);
                const double* b = rows + k * rows_ld;
                for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
            }
        }
    }
}

// ---- choosing a path ----------------------------------------------------------

void require_supported(GemmPath path, const char* who) {
    if (!gemm_path_supported(path))
        throw std::runtime_error(std::string(who) + ": the " + gemm_path_name(path) +
                                 " GEMM path needs CPU features this machine does not have");
}

std::atomic<gemm_internal::Packing> packing_policy{gemm_internal::Packing::by_size};

// ---- threads ------------------------------------------------------------------
// When a product is split over the pool (docs/gemm.md §7). Waking a sleeping
// pool worker goes through the kernel's scheduler and takes microseconds to
// tens of microseconds (figures in docs/performance.md, "Figures behind the
// comments"); handing work to a worker that is awake, spinning for its next
// job (parallel.cpp), takes under a microsecond. So:
//  - from 4M multiply-adds (about 70 µs on one core) a product is always
//    split: half of it repays even a slow wake-up;
//  - from 256K (64×64×64, about 4.5 µs) it is split if the workers are awake.
//    If they sleep, it runs here, and they are roused to spin for the next
//    product: in a loop of such products (a training step's), from the
//    second product on they are all split.
//  - below 256K a product always runs on the calling thread: a half-product
//    of 2 µs would gain too little over the hand-off.
constexpr int64_t parallel_min_madds = int64_t(1) << 22;
constexpr int64_t awake_parallel_min_madds = int64_t(1) << 18;

// The register tile of a path: pieces handed to threads are whole tiles, so
// no thread computes partial tiles in the middle of C.
void tile_of(GemmPath path, int64_t& mr, int64_t& nr) {
    using namespace gemm_internal;
    switch (path) {
        case GemmPath::avx512: mr = avx512_mr, nr = avx512_nr; return;
        case GemmPath::avx2: mr = avx2_mr, nr = avx2_nr; return;
        case GemmPath::neon: mr = neon_mr, nr = neon_nr; return;
        default: mr = nr = 1;
    }
}

void run_on_this_thread(GemmPath path, const Product& p) {
    switch (path) {
#if defined(__x86_64__)
        case GemmPath::avx512:
            gemm_internal::product_avx512(p);
            return;
        case GemmPath::avx2:
            gemm_internal::product_avx2(p);
            return;
#elif defined(__aarch64__)
        case GemmPath::neon:
            gemm_internal::product_neon(p);
            return;
#endif
        default: {
            // An implicit B is stored first: packed as one panel of all N
            // columns, it is B row-major (gemm.hpp).
            std::vector<float> stored;
            View b = p.b;
            if (p.b_source) {
                stored.resize(static_cast<size_t>(p.K * p.N));
                p.b_source->pack(p.b_source->ctx, 0, p.K, p.b_col0, p.N, p.N, stored.data());
                b = View{stored.data(), p.N, 1};
            }
            // The reference loop takes (trans, ld) pairs; a view with unit
            // row stride is a transposed matrix (see make_product).
            const bool ta = p.a.row_stride == 1 && p.a.col_stride != 1;
            const bool tb = b.row_stride == 1 && b.col_stride != 1;
            gemm_reference(ta, tb, p.M, p.N, p.K, p.alpha, p.a.data, ta ? p.a.col_stride : p.a.row_stride, b.data,
                           tb ? b.col_stride : b.row_stride, p.beta, p.c, p.ldc);
        }
    }
}

// Splits C into one block of whole tiles per thread — along M or along N,
// whichever has more tiles — and runs each block as an independent product.
// Every element of C is computed by the same sequence of FMAs whichever
// thread computes it (the k order depends only on K), so the result is the
// same bits for any thread count.
// y = beta·y + alpha·A·x for an M×K view A, x of K values (stride incx) and y
// of M values (stride incy): the GEMM when C is one column (N = 1). Packing
// and register tiles would be 1/16 to 1/32 full here; one pass over A is all
// it takes. Rows of A contiguous: a dot product per row (four partial sums
// for the adder's latency); columns contiguous: y += x_k·A[:, k], column by column.
void gemv(int64_t M, int64_t K, float alpha, const View& A, const float* x, int64_t incx, float beta, float* y,
          int64_t incy) {
    std::vector<float> acc(static_cast<size_t>(M), 0.0f);
    bool done = false;  // by the SIMD loops (gemv_avx2.cpp, gemv_neon.cpp), when the CPU and the layout allow
#if defined(__x86_64__)
    static const bool avx2 = gemm_internal::cpu_features().avx2;
    done = avx2 && gemm_internal::gemv_avx2(M, K, A, x, incx, acc.data());
#elif defined(__aarch64__)
    done = gemm_internal::gemv_neon(M, K, A, x, incx, acc.data());
#endif
    if (!done && A.col_stride == 1) {
        for (int64_t i = 0; i < M; ++i) {
            const float* row = A.data + i * A.row_stride;
            float s[4] = {0, 0, 0, 0};
            int64_t k = 0;
            for (; k + 4 <= K; k += 4)
                for (int64_t u = 0; u < 4; ++u) s[u] += row[k + u] * x[(k + u) * incx];
            for (; k < K; ++k) s[0] += row[k] * x[k * incx];
            acc[static_cast<size_t>(i)] = (s[0] + s[1]) + (s[2] + s[3]);
        }
    } else if (!done) {
        float* a = acc.data();
        for (int64_t k = 0; k < K; ++k) {
            const float xk = x[k * incx];
            const float* col = A.data + k * A.col_stride;
            for (int64_t i = 0; i < M; ++i) a[i] += xk * col[i * A.row_stride];
        }
    }
    for (int64_t i = 0; i < M; ++i) {
        const float prior = beta == 0.0f ? 0.0f : beta * y[i * incy];
        y[i * incy] = prior + alpha * acc[static_cast<size_t>(i)];
    }
}

void run(GemmPath path, const Product& p) {
    if (p.M <= 0 || p.N <= 0) return;
    // (the reference stays the triple loop; an implicit B exists only as packed blocks)
    const bool vector_product = path != GemmPath::reference && p.K > 0 && !p.b_source;
    if (vector_product && p.N == 1) {  // C = A·b, one column
        return gemv(p.M, p.K, p.alpha, p.a, p.b.data, p.b.row_stride, p.beta, p.c, p.ldc);
    }
    if (vector_product && p.M == 1) {  // C = a·B, one row: Cᵀ = Bᵀ·aᵀ
        const View bt{p.b.data, p.b.col_stride, p.b.row_stride};
        return gemv(p.N, p.K, p.alpha, bt, p.a.data, p.a.col_stride, p.beta, p.c, 1);
    }
    if (p.K == 0) {  // an empty sum: C = beta·C, and beta == 0 overwrites (as in BLAS)
        for (int64_t i = 0; i < p.M; ++i)
            for (int64_t j = 0; j < p.N; ++j) p.c[i * p.ldc + j] = p.beta == 0.0f ? 0.0f : p.beta * p.c[i * p.ldc + j];
        return;
    }
    const int threads = num_threads();
    const int64_t madds = p.M * p.N * p.K;
    if (threads == 1 || madds < awake_parallel_min_madds) return run_on_this_thread(path, p);
    if (madds < parallel_min_madds && !pool_workers_awake()) {
        pool_rouse_workers();
        return run_on_this_thread(path, p);
    }
    int64_t mr = 1, nr = 1;
    tile_of(path, mr, nr);
    const int64_t m_tiles = (p.M + mr - 1) / mr, n_tiles = (p.N + nr - 1) / nr;
    const bool by_rows = m_tiles >= n_tiles;
    const int64_t tiles = by_rows ? m_tiles : n_tiles, tile = by_rows ? mr : nr;
    parallel_for(0, tiles, 1, [&](int64_t t0, int64_t t1) {
        Product piece = p;
        if (by_rows) {
            const int64_t i0 = t0 * tile, i1 = std::min(p.M, t1 * tile);
            piece.M = i1 - i0;
            piece.a.data += i0 * p.a.row_stride;
            piece.c += i0 * p.ldc;
        } else {
            const int64_t j0 = t0 * tile, j1 = std::min(p.N, t1 * tile);
            piece.N = j1 - j0;
            if (p.b_source) piece.b_col0 += j0;
            else piece.b.data += j0 * p.b.col_stride;
            piece.c += j0;
        }
        run_on_this_thread(path, piece);
    });
}

Product make_product(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    const View a = trans_a ? View{A, 1, lda} : View{A, lda, 1};
    const View b = trans_b ? View{B, 1, ldb} : View{B, ldb, 1};
    return Product{M, N, K, alpha, a, b, beta, C, ldc};
}

void check_args(const char* who, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda,
                int64_t ldb, int64_t ldc) {
    const int64_t a_cols = trans_a ? M : K, b_cols = trans_b ? K : N;
    if (M < 0 || N < 0 || K < 0)
        throw std::invalid_argument(std::string(who) + ": negative size M=" + std::to_string(M) +
                                    " N=" + std::to_string(N) + " K=" + std::to_string(K));
    // A row of ld elements must hold the columns read from it. (BLAS also asks
    // ld ≥ 1; a matrix with no columns is never read, so ld = 0 is harmless and
    // is what an empty sequence, n = 0, naturally passes.)
    if (lda < a_cols || ldb < b_cols || ldc < N)
        throw std::invalid_argument(std::string(who) + ": leading dimensions lda=" + std::to_string(lda) +
                                    " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
                                    " are shorter than the rows they stride over (" + std::to_string(a_cols) +
                                    ", " + std::to_string(b_cols) + ", " + std::to_string(N) + ")");
}

}  // namespace

// ---- public API ---------------------------------------------------------------

GemmPath parse_gemm_path(std::string_view name) {
    if (name == "reference") return GemmPath::reference;
    if (name == "avx2") return GemmPath::avx2;
    if (name == "avx512") return GemmPath::avx512;
    if (name == "neon") return GemmPath::neon;
    throw std::invalid_argument("ATTN_GEMM=" + std::string(name) + ": expected reference, avx2, avx512 or neon");
}

const char* gemm_path_name(GemmPath path) {
    switch (path) {
        case GemmPath::avx2: return "avx2";
        case GemmPath::avx512: return "avx512";
        case GemmPath::neon: return "neon";
        default: return "reference";
    }
}

bool gemm_path_supported(GemmPath path) {
    const gemm_internal::CpuFeatures cpu = gemm_internal::cpu_features();
    return path == GemmPath::reference || (path == GemmPath::avx2 && cpu.avx2) ||
           (path == GemmPath::avx512 && cpu.avx512) || (path == GemmPath::neon && cpu.neon);
}

GemmPath gemm_default_path() {
    // Decided once: CPUID and the environment do not change while we run.
    static const GemmPath path = gemm_internal::choose_path(std::getenv("ATTN_GEMM"), gemm_internal::cpu_features());
    return path;
}

namespace gemm_internal {

CpuFeatures cpu_features() {
    CpuFeatures cpu;
#if defined(__x86_64__)
    // __builtin_cpu_supports also checks that the OS saves the registers (XGETBV).
    __builtin_cpu_init();  // in case we run before the constructors that call it
    cpu.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    // gemm_avx512.cpp is compiled with all four (see the Makefile).
    cpu.avx512 = cpu.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#elif defined(__aarch64__)
    cpu.neon = true;  // part of the architecture: nothing to ask
#endif
    return cpu;
}

GemmPath choose_path(const char* env, CpuFeatures cpu) {
    if (env == nullptr)
        return cpu.avx512 ? GemmPath::avx512
               : cpu.avx2 ? GemmPath::avx2
               : cpu.neon ? GemmPath::neon
                          : GemmPath::reference;
    const GemmPath forced = parse_gemm_path(env);
    if ((forced == GemmPath::avx2 && !cpu.avx2) || (forced == GemmPath::avx512 && !cpu.avx512) ||
        (forced == GemmPath::neon && !cpu.neon))
        throw std::runtime_error(std::string("ATTN_GEMM=") + env + ": this CPU does not support the " +
                                 gemm_path_name(forced) + " GEMM path");
    return forced;
}

void set_packing(Packing policy) { packing_policy.store(policy, std::memory_order_relaxed); }
Packing packing() { return packing_policy.load(std::memory_order_relaxed); }

}  // namespace gemm_internal

namespace {
// The FLOPs of `batch` products of M×K by K×N, for the profiler.
double product_flops(int64_t batch, int64_t M, int64_t N, int64_t K) {
    return 2.0 * static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
}
}  // namespace

void gemm_with(GemmPath path, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    const ProfileScope scope("gemm", product_flops(1, M, N, K));
    require_supported(path, "gemm_with");
    check_args("gemm", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    run(path, make_product(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    const ProfileScope scope("gemm", product_flops(1, M, N, K));
    check_args("gemm", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    run(gemm_default_path(), make_product(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc));
}

namespace {
Product implicit_product(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                         const ImplicitB<float>& B, float beta, float* C, int64_t ldc) {
    check_args("gemm_implicit_b", trans_a, false, M, N, K, lda, N, ldc);
    Product p = make_product(trans_a, false, M, N, K, alpha, A, lda, nullptr, N, beta, C, ldc);
    p.b = View{nullptr, 0, 0};
    p.b_source = &B;
    return p;
}
}  // namespace

void gemm_implicit_b_with(GemmPath path, bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, const ImplicitB<float>& B, float beta, float* C, int64_t ldc) {
    const ProfileScope scope("gemm", product_flops(1, M, N, K));
    require_supported(path, "gemm_implicit_b_with");
    run(path, implicit_product(trans_a, M, N, K, alpha, A, lda, B, beta, C, ldc));
}

void gemm_implicit_b(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const ImplicitB<float>& B, float beta, float* C, int64_t ldc) {
    const ProfileScope scope("gemm", product_flops(1, M, N, K));
    run(gemm_default_path(), implicit_product(trans_a, M, N, K, alpha, A, lda, B, beta, C, ldc));
}

namespace {
void gemm_double(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                 int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
    check_args("gemm", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    // Rows of C are independent: split them over the pool when there is enough work.
    const int64_t grain = std::max<int64_t>(1, parallel_min_madds / 4 / std::max<int64_t>(1, N * K));
    parallel_for(0, M, grain, [&](int64_t i0, int64_t i1) {
        gemm_double_rows(trans_a, trans_b, i0, i1, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
    const ProfileScope scope("gemm", product_flops(1, M, N, K));
    gemm_double(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The double version stores B whole (row-major, gemm.hpp) and multiplies it.
void gemm_implicit_b(bool trans_a, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                     const ImplicitB<double>& B, double beta, double* C, int64_t ldc) {
    const ProfileScope scope("gemm", product_flops(1, M, N, K));
    check_args("gemm_implicit_b", trans_a, false, M, N, K, lda, N, ldc);
    std::vector<double> stored(static_cast<size_t>(K * N));
    if (K > 0 && N > 0) B.pack(B.ctx, 0, K, 0, N, N, stored.data());
    gemm_double(trans_a, false, M, N, K, alpha, A, lda, stored.data(), N, beta, C, ldc);
}

// Batched: one product per matrix. Many small products (attention over a
// batch of heads) are spread over the pool one whole product per task; few
// large ones are each split by gemm() itself. When the C matrices overlap
// (stride_c == 0 accumulates into one C), the products run in order.
template <class T, class Gemm>
void batched(int64_t batch, int64_t M, int64_t N, int64_t K, const T* A, int64_t stride_a, const T* B,
             int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, Gemm one) {
    if (batch < 0) throw std::invalid_argument("gemm_batched: negative batch " + std::to_string(batch));
    if (batch == 0 || M == 0 || N == 0) return;
    const bool disjoint = stride_c >= (M - 1) * ldc + N || stride_c <= -((M - 1) * ldc + N);
    const bool spread = disjoint && batch > 1 && M * N * K < parallel_min_madds;
    const int64_t grain = spread ? std::max<int64_t>(1, parallel_min_madds / 4 / std::max<int64_t>(1, M * N * K))
                                 : batch;
    parallel_for(0, batch, grain, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i) one(A + i * stride_a, B + i * stride_b, C + i * stride_c);
    });
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b,
                  float beta, float* C, int64_t ldc, int64_t stride_c) {
    const ProfileScope scope("gemm", product_flops(batch, M, N, K));
    check_args("gemm_batched", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    const GemmPath path = gemm_default_path();
    batched(batch, M, N, K, A, stride_a, B, stride_b, C, ldc, stride_c, [&](const float* a, const float* b, float* c) {
        run(path, make_product(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc));
    });
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                  const double* A, int64_t lda, int64_t stride_a, const double* B, int64_t ldb, int64_t stride_b,
                  double beta, double* C, int64_t ldc, int64_t stride_c) {
    const ProfileScope scope("gemm", product_flops(batch, M, N, K));
    batched(batch, M, N, K, A, stride_a, B, stride_b, C, ldc, stride_c,
            [&](const double* a, const double* b, double* c) {
                gemm_double(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
            });
}

}  // namespace attn
