// The AVX-512 GEMM path: its micro-kernel and block sizes. The loops around
// the kernel are in loops.hpp, the packing in pack.hpp; docs/gemm.md tells
// the whole story. Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl
// (the Makefile, by file name); gemm.cpp calls it only when CPUID has them.
#include <immintrin.h>

#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/gemm/loops.hpp"

namespace attn::gemm_internal {
namespace {

struct Avx512 {
    // ---- registers: the micro-kernel's tile -------------------------------
    // The kernel keeps an MR×NR tile of C in registers for its whole k loop:
    // 8 rows × 32 columns = 8 × 2 zmm registers of 16 floats. Each step k
    // loads 2 vectors of B̃, broadcasts 8 numbers of Ã, and does 16 FMAs:
    // 16 accumulators + 2 B vectors + 1 broadcast = 19 of the 32 zmm. Why
    // this shape:
    //  - an FMA has 4 cycles of latency and up to 2 start per cycle (Zen 4
    //    starts 1 zmm FMA per cycle: it splits each over its two 256-bit
    //    pipes), so at least 8 independent accumulators must be in flight;
    //    16 leave margin for the loads to come late;
    //  - per step, 10 loads for 16 FMAs: well under 2 loads per cycle;
    //  - 8 divides every M of the workloads (64, 128, 1024, ...) and 32 every
    //    N but 48, so small products have few partial tiles. A 14×32 tile (28
    //    accumulators) would save loads we are not short of, and waste up to
    //    13 rows of work on every partial tile.
    static constexpr int MR = avx512_mr;  // 8
    static constexpr int NR = avx512_nr;  // 32
    static constexpr int VL = 16;         // floats per zmm register

    // ---- caches: the blocks -----------------------------------------------
    // L1 (32 KiB): an Ã micro-panel, MR×KC·4 B = 12 KiB, reused by every tile
    // of the jr loop; the rest of L1 takes the stream of B̃ and the C tile.
    // KC = 384 also means each C tile is read and written once per 384 steps
    // (6,144 FMAs), which makes C's traffic negligible.
    static constexpr int64_t KC = 384;
    // L2 (1 MiB per core): the B̃ block, KC×NC·4 B = 768 KiB, reused by every
    // row panel of the ir loop.
    static constexpr int64_t NC = 512;
    // L3 (32 MiB, shared): the Ã block, MC×KC·4 B = 1.5 MiB. MC only bounds
    // the buffer, and how often B̃ is packed again (once per MC rows).
    static constexpr int64_t MC = 1024;

    // When to pack an operand instead of reading it in place (loops.hpp): B
    // when one KC-deep block of it spans over 256 KiB, A when it holds over
    // 128K floats (512 KiB). Measured on the W1 shapes.
    static constexpr int64_t pack_b_span = 256 * 1024, pack_a_min = 128 * 1024;
    // A row-major A (op(A) = A) is read in place unless at least 8 tiles of a
    // row (N ≥ 256) reuse each micro-panel: its 8 rows are 8 sequential
    // streams, which the hardware prefetchers keep ahead of the kernel, so
    // the copy pays only with many tiles (docs/gemm.md has the figures).
    static constexpr int pack_a_row_major_min_tiles = 8;
    // op(A) = Aᵀ with rows 4 KiB or more apart is packed, except when A is
    // larger than L2 (1 MiB here) and fewer than 512 columns of C reuse it:
    // then packing it, one 64-byte line from each of kc rows in turn, waits
    // on L3 for every line, and costs more than the kernel's own reads of A
    // in place, which the out-of-order core overlaps with 16 FMAs a step.
    // Measured, TN 1024×N×1024: N = 64, 128, 256 in place 99–110 GFLOP/s,
    // packed 73–96; N = 512 and 1024 packed 105, in place 99–102; A of 1 MiB
    // or less (proj-out, gru-in): packed 93–103, in place 81–94.
    static constexpr int64_t strided_a_in_place_min = 1 << 20, strided_a_in_place_max_n = 512;

    // ---- the micro-kernel ---------------------------------------------------
    // One tile of R ≤ MR rows and V ≤ 2 vectors (cols ≤ 16·V columns):
    //     C[r][·] = alpha · Σ_k a(r, k) · b(k, ·) + beta · C[r][·]
    // with a(r, k) = a[r·a_rs + k·a_ks] and row k of b at b + k·b_ks (see
    // loops.hpp). On an EDGE tile the last vector's columns past `cols` are
    // masked off, in the loads of B and C and in the store: no edge falls back
    // to scalar code, and nothing past the end of a row is read or written.
    // Always inlined into the loop over tiles (loops.hpp), so that a tile
    // costs no call: on a 64×64×64 product a tile is only ~1,000 cycles.
    template <int R, int V, bool EDGE>
    [[gnu::always_inline]] static void tile(int64_t kc, const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                                            int64_t b_ks, float* c, int64_t ldc, float alpha, float beta,
                                            int64_t cols) {
        const auto last = EDGE ? static_cast<__mmask16>((1u << (cols - VL * (V - 1))) - 1) : __mmask16(0xFFFF);
        // On a long k loop, start fetching the tile of C now, so that its
        // loads at the end hit L1 instead of waiting ~100 ns for memory. (A
        // short loop has no time to hide the fetch, and C is then usually in
        // cache anyway: the prefetches would only cost.)
        if (kc >= 128) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + cols - 1), _MM_HINT_T0);
            }
        }

        __m512 acc[R][V];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();

        // The k loop: each step loads V vectors of B and broadcasts R numbers
        // of A; its R·V FMAs are independent of each other.
#pragma GCC unroll 4
        for (int64_t k = 0; k < kc; ++k) {
            __m512 bv[V];
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v)
                bv[v] = EDGE && v == V - 1 ? _mm512_maskz_loadu_ps(last, b + VL * v) : _mm512_loadu_ps(b + VL * v);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m512 ar = _mm512_set1_ps(a[r * a_rs]);
#pragma GCC unroll 2
                for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
            }
            a += a_ks;
            b += b_ks;
        }

        // C = alpha·acc + beta·C; beta = 0 never reads C (it may hold NaN).
        const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
        // The stores step one pointer down the rows. The empty asm statement
        // emits no instruction; it tells the compiler that c may have changed,
        // so the compiler cannot instead keep one pointer per row alive from
        // tile to tile (it did: too many for the registers, spilled, reloaded
        // before each store and stepped in memory after each tile), which
        // showed in small products (docs/performance.md).
        asm("" : "+r"(c));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r, c += ldc)
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) {
                float* cp = c + VL * v;
                __m512 x = alpha == 1.0f ? acc[r][v] : _mm512_mul_ps(alpha_v, acc[r][v]);
                if (EDGE && v == V - 1) {
                    if (beta != 0.0f) x = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(last, cp), x);
                    _mm512_mask_storeu_ps(cp, last, x);
                } else {
                    if (beta != 0.0f) x = _mm512_fmadd_ps(beta_v, _mm512_loadu_ps(cp), x);
                    _mm512_storeu_ps(cp, x);
                }
            }
    }
};

}  // namespace

void product_avx512(const Product& p) { blocked_product<Avx512>(p); }

}  // namespace attn::gemm_internal
