// The NEON GEMM path, for 64-bit ARM (Apple Silicon, Graviton, Raspberry Pi 4
// and 5, ...): its micro-kernel and block sizes. The loops around the kernel
// are in loops.hpp, the packing in pack.hpp; docs/gemm.md tells the whole
// story. NEON (Advanced SIMD) is part of every AArch64 CPU, so this file needs
// no compiler flag and gemm.cpp no CPU check: the Makefile compiles it when
// the compiler targets aarch64, and the guard below keeps it empty otherwise.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <type_traits>
#include <utility>

#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/gemm/loops.hpp"

namespace attn::gemm_internal {
namespace {

// f(std::integral_constant<int, 0>{}), ..., f(std::integral_constant<int, N-1>{}):
// a loop whose index is a compile-time constant, as the lane argument of
// vfmaq_laneq_f32 must be.
template <int N, class F>
[[gnu::always_inline]] inline void for_each_index(F f) {
    [&]<int... i>(std::integer_sequence<int, i...>) {
        (f(std::integral_constant<int, i>{}), ...);
    }(std::make_integer_sequence<int, N>{});
}

// The first n (1 to 3) numbers at p in the low lanes, zeros above: what a
// masked load is on x86. NEON has no masks, so lane by lane.
inline float32x4_t load_first(const float* p, int n) {
    float32x4_t v = vdupq_n_f32(0.0f);
    v = vld1q_lane_f32(p, v, 0);
    if (n > 1) v = vld1q_lane_f32(p + 1, v, 1);
    if (n > 2) v = vld1q_lane_f32(p + 2, v, 2);
    return v;
}

// Stores the low n (1 to 3) lanes of v at p, and nothing past them.
inline void store_first(float* p, float32x4_t v, int n) {
    vst1q_lane_f32(p, v, 0);
    if (n > 1) vst1q_lane_f32(p + 1, v, 1);
    if (n > 2) vst1q_lane_f32(p + 2, v, 2);
}

struct Neon {
    // ---- registers: the micro-kernel's tile -------------------------------
    // 8 rows × 12 columns = 8 × 3 q registers of 4 floats: 24 accumulators
    // + 3 B vectors + 2 A vectors = 29 of the 32 NEON registers. Each step k
    // loads 3 vectors of B̃ and the 8 numbers of Ã as 2 vectors, and does 24
    // FMAs, each taking its multiplier from one lane of an A vector (FMLA by
    // element, vfmaq_laneq_f32). x86 must broadcast each number of A into a
    // register of its own; here one load of A serves four rows. Why this
    // shape (BLIS's for ARMv8 too):
    //  - an FMA's result is ready about 4 cycles after it starts, and big ARM
    //    cores start 2 (Cortex-A76, Neoverse) to 4 (Apple M1 and later) per
    //    cycle: 8 to 16 independent accumulators must be in flight; 24 leave
    //    room for a late load;
    //  - 5 loads per 24 FMAs, far below the 2–3 loads per cycle these cores do;
    //  - 8 rows divide every M of the workloads, and with 12 columns an N that
    //    is a multiple of 4 ends in a tile of whole vectors (N = 64: five
    //    tiles of 12 and one of 4): no workload shape takes the lane-by-lane
    //    edge path. An 8×8 tile has only 16 accumulators, just what the
    //    widest cores need with no slack; 12×8 would cut M = 64 into five
    //    panels and a partial one of 4 rows.
    static constexpr int MR = neon_mr;  // 8
    static constexpr int NR = neon_nr;  // 12
    static constexpr int VL = 4;        // floats per q register

    // ---- caches: the blocks (sized for the smallest of these cores) --------
    // L1 (32 KiB on Cortex-A72, 64 KiB on A76 and Neoverse, 128 KiB on Apple
    // cores): an Ã micro-panel, 8×KC·4 B = 8 KiB, beside the stream of B̃.
    static constexpr int64_t KC = 256;
    // L2 (512 KiB to 1 MiB per core or cluster; 12 MiB or more on Apple): the
    // B̃ block, KC×NC·4 B = 384 KiB. NC is a whole number of tiles (32 × 12).
    static constexpr int64_t NC = 384;
    // The Ã block, MC×KC·4 B = 768 KiB; MC only bounds the buffer.
    static constexpr int64_t MC = 768;

    // When to pack an operand instead of reading it in place (loops.hpp):
    // the rules of the AVX2 path, whose caches these resemble. A strided Aᵀ
    // is always packed.
    static constexpr int64_t pack_b_span = 256 * 1024, pack_a_min = 128 * 1024;
    static constexpr int pack_a_row_major_min_tiles = 4;
    static constexpr int64_t strided_a_in_place_min = INT64_MAX, strided_a_in_place_max_n = 0;

    // ---- the micro-kernel ---------------------------------------------------
    // One tile of R ≤ MR rows and V ≤ 3 vectors (cols ≤ 4·V columns):
    //     C[r][·] = alpha · Σ_k a(r, k) · b(k, ·) + beta · C[r][·]
    // with a(r, k) = a[r·a_rs + k·a_ks] and row k of b at b + k·b_ks (see
    // loops.hpp). On an EDGE tile the last vector holds fewer than 4 columns:
    // it is loaded and stored lane by lane, so nothing past the end of a row
    // of B or C is read or written.
    template <int R, int V, bool EDGE>
    [[gnu::always_inline]] static void tile(int64_t kc, const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                                            int64_t b_ks, float* c, int64_t ldc, float alpha, float beta,
                                            int64_t cols) {
        const int last = static_cast<int>(cols - VL * (V - 1));  // columns of the last vector: 1 to 4

        float32x4_t acc[R][V];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
            for (int v = 0; v < V; ++v) acc[r][v] = vdupq_n_f32(0.0f);

        // The k loop, in one of two forms: the R numbers of a step adjacent
        // (a packed Ã, or op(A) = Aᵀ read in place) are loaded as vectors and
        // used lane by lane; R numbers a row of A apart (op(A) = A in place)
        // are each loaded into all four lanes (LD1R), as x86 broadcasts.
        if (a_rs == 1)
            k_loop<R, V, EDGE, true>(acc, kc, a, a_rs, a_ks, b, b_ks, last);
        else
            k_loop<R, V, EDGE, false>(acc, kc, a, a_rs, a_ks, b, b_ks, last);

        // C = alpha·acc + beta·C; beta = 0 never reads C (it may hold NaN).
        const float32x4_t alpha_v = vdupq_n_f32(alpha), beta_v = vdupq_n_f32(beta);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
            for (int v = 0; v < V; ++v) {
                float* cp = c + r * ldc + VL * v;
                float32x4_t x = alpha == 1.0f ? acc[r][v] : vmulq_f32(alpha_v, acc[r][v]);
                if (EDGE && v == V - 1) {
                    if (beta != 0.0f) x = vfmaq_f32(x, beta_v, load_first(cp, last));
                    store_first(cp, x, last);
                } else {
                    if (beta != 0.0f) x = vfmaq_f32(x, beta_v, vld1q_f32(cp));
                    vst1q_f32(cp, x);
                }
            }
    }

    // Each step loads V vectors of B and R numbers of A and does R·V
    // independent FMAs: acc[r][v] += a(r, k) · b(k, 4v..4v+3).
    template <int R, int V, bool EDGE, bool A_ADJACENT>
    [[gnu::always_inline]] static void k_loop(float32x4_t (&acc)[R][V], int64_t kc, const float* a, int64_t a_rs,
                                              int64_t a_ks, const float* b, int64_t b_ks, int last) {
        // Not unrolled: a step is 24 FMAs and 3 instructions of loop, and
        // unrolled by 4, clang scheduled the loads of later steps early and
        // ran out of registers (accumulators spilled to the stack).
#pragma GCC unroll 1
        for (int64_t k = 0; k < kc; ++k) {
            float32x4_t bv[V];
#pragma GCC unroll 3
            for (int v = 0; v < V; ++v)
                bv[v] = EDGE && v == V - 1 ? load_first(b + VL * v, last) : vld1q_f32(b + VL * v);
            if constexpr (A_ADJACENT) {
                // Rows 4q..4q+3 in vector q; a last vector of fewer than 4
                // rows (R = 1..7) is loaded lane by lane, as it may end a row
                // of Aᵀ.
                float32x4_t av[(R + 3) / 4];
#pragma GCC unroll 2
                for (int q = 0; q < (R + 3) / 4; ++q)
                    av[q] = 4 * q + 4 <= R ? vld1q_f32(a + 4 * q) : load_first(a + 4 * q, R - 4 * q);
                for_each_index<R>([&](auto row) {
                    constexpr int r = decltype(row)::value;
#pragma GCC unroll 3
                    for (int v = 0; v < V; ++v) acc[r][v] = vfmaq_laneq_f32(acc[r][v], bv[v], av[r / 4], r % 4);
                });
            } else {
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const float32x4_t ar = vld1q_dup_f32(a + r * a_rs);
#pragma GCC unroll 3
                    for (int v = 0; v < V; ++v) acc[r][v] = vfmaq_f32(acc[r][v], bv[v], ar);
                }
            }
            a += a_ks;
            b += b_ks;
        }
    }
};

}  // namespace

void product_neon(const Product& p) { blocked_product<Neon>(p); }

}  // namespace attn::gemm_internal

#endif  // __aarch64__
