// The AVX2 + FMA GEMM path: its micro-kernel and block sizes. The loops
// around the kernel are in loops.hpp, the packing in pack.hpp; docs/gemm.md
// tells the whole story. Compiled with -mavx2 -mfma (the Makefile, by file
// name); gemm.cpp calls it only when CPUID has both.
#include <immintrin.h>

#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/gemm/loops.hpp"

namespace attn::gemm_internal {
namespace {

struct Avx2 {
    // ---- registers: the micro-kernel's tile -------------------------------
    // 6 rows × 16 columns = 6 × 2 ymm registers of 8 floats: 12 accumulators
    // + 2 B vectors + 1 broadcast = 15 of the 16 ymm registers, the classic
    // Haswell shape (BLIS, OpenBLAS). 12 independent FMAs per step cover the
    // 4-cycle latency at 2 FMAs per cycle (8 needed); 8 loads per 12 FMAs fit
    // the 2 loads per cycle. A 4×24 tile would fit too, but 16 divides every
    // N of the workloads (48 included) and 24 does not divide 64.
    static constexpr int MR = avx2_mr;  // 6
    static constexpr int NR = avx2_nr;  // 16
    static constexpr int VL = 8;        // floats per ymm register

    // ---- caches: the blocks (sized for the smallest AVX2 machines) ---------
    // L1 (32 KiB): an Ã micro-panel, 6×KC·4 B = 6 KiB, plus the stream of B̃.
    static constexpr int64_t KC = 256;
    // L2 (256 KiB on Haswell–Skylake, 512 KiB on Zen 2/3): the B̃ block,
    // KC×NC·4 B = 192 KiB.
    static constexpr int64_t NC = 192;
    // L3: the Ã block, MC×KC·4 B = 720 KiB.
    static constexpr int64_t MC = 720;

    // When to pack an operand instead of reading it in place (loops.hpp).
    static constexpr int64_t pack_b_span = 256 * 1024, pack_a_min = 128 * 1024;
    static constexpr int pack_a_row_major_min_tiles = 4;
    // A strided Aᵀ is always packed here (loops.hpp): with 6-row tiles and
    // 12 ymm FMAs a step, each FMA waits on a strided load, so reading it in
    // place was slower on every shape measured (docs/performance.md).
    static constexpr int64_t strided_a_in_place_min = INT64_MAX, strided_a_in_place_max_n = 0;

    // The mask of the columns of the last vector that exist: lane i is on
    // (all ones) when i < n.
    static __m256i lanes_below(int64_t n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }

    // ---- the micro-kernel ---------------------------------------------------
    // One tile of R ≤ MR rows and V ≤ 2 vectors (cols ≤ 8·V columns), as in
    // gemm_avx512.cpp: C[r][·] = alpha · Σ_k a(r, k) · b(k, ·) + beta · C[r][·].
    // On an EDGE tile the last vector's columns past `cols` are masked
    // (vmaskmovps) in the loads of B and C and in the store.
    template <int R, int V, bool EDGE>
    [[gnu::always_inline]] static void tile(int64_t kc, const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                                            int64_t b_ks, float* c, int64_t ldc, float alpha, float beta,
                                            int64_t cols) {
        const __m256i last = lanes_below(cols - VL * (V - 1));
        if (kc >= 128) {  // start fetching C on a long k loop, as in gemm_avx512.cpp
#pragma GCC unroll 6
            for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
        }

        __m256 acc[R][V];
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();

#pragma GCC unroll 4
        for (int64_t k = 0; k < kc; ++k) {
            __m256 bv[V];
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v)
                bv[v] = EDGE && v == V - 1 ? _mm256_maskload_ps(b + VL * v, last) : _mm256_loadu_ps(b + VL * v);
#pragma GCC unroll 6
            for (int r = 0; r < R; ++r) {
                const __m256 ar = _mm256_broadcast_ss(a + r * a_rs);
#pragma GCC unroll 2
                for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
            }
            a += a_ks;
            b += b_ks;
        }

        const __m256 alpha_v = _mm256_set1_ps(alpha), beta_v = _mm256_set1_ps(beta);
        // The stores step one pointer down the rows. The empty asm statement
        // emits no instruction; it tells the compiler that c may have changed,
        // so the compiler cannot instead keep one pointer per row alive from
        // tile to tile (it did: too many for the registers, spilled, reloaded
        // before each store and stepped in memory after each tile), which
        // showed in small products (docs/performance.md).
        asm("" : "+r"(c));
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r, c += ldc)
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) {
                float* cp = c + VL * v;
                __m256 x = alpha == 1.0f ? acc[r][v] : _mm256_mul_ps(alpha_v, acc[r][v]);
                if (EDGE && v == V - 1) {
                    if (beta != 0.0f) x = _mm256_fmadd_ps(beta_v, _mm256_maskload_ps(cp, last), x);
                    _mm256_maskstore_ps(cp, last, x);
                } else {
                    if (beta != 0.0f) x = _mm256_fmadd_ps(beta_v, _mm256_loadu_ps(cp), x);
                    _mm256_storeu_ps(cp, x);
                }
            }
    }
};

}  // namespace

void product_avx2(const Product& p) { blocked_product<Avx2>(p); }

}  // namespace attn::gemm_internal
