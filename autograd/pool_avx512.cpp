// max_pool2d's 2×2 row kernels with AVX-512 (autograd/pool_kernels.hpp):
// 16 windows at a time, the same comparisons in the same order as the
// portable row (ops_conv_fast.cpp), so the same maxima, offsets and ties. Compiled
// with the AVX-512 flags (the Makefile, by file name).
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "autograd/pool_kernels.hpp"

namespace attn::detail {

namespace {

// (No vector constants at namespace scope: their initialisation would run
// AVX-512 instructions when the program starts, on any CPU.)

// Every lane. The conversions and permutes below are the zero-masked forms
// with all lanes kept: the same instructions, but GCC 12 warns that the plain
// forms' undefined pass-through register "may be used uninitialized".
constexpr __mmask16 kAll = 0xFFFF;

// The lanes of the first `count` elements (count ≤ 16; count ≤ 0: none).
__mmask16 first(int64_t count) {
    return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

}  // namespace

// Each row: whole groups of 16 windows, then the last few with their loads
// and stores masked to the row (W4's second pool has rows of 14 windows).
void max_pool_2x2_rows_avx512(const float* x, int64_t W, int64_t rows, int64_t Wo, float* z, uint16_t* argmax) {
    // Lanes 0–15 of a pair of vectors: the even elements (the windows' left
    // columns) and the odd ones (their right columns).
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int64_t r = 0; r < rows; ++r, z += Wo, argmax += Wo) {
        const float* top = x + 2 * r * W;
        const float* bottom = top + W;
        for (int64_t ow = 0; ow < Wo; ow += 16) {
            const int64_t windows = std::min<int64_t>(16, Wo - ow);
            const __mmask16 lo = first(2 * windows), hi = first(2 * windows - 16), out = first(windows);
            const __m512 t0 = _mm512_maskz_loadu_ps(lo, top + 2 * ow), t1 = _mm512_maskz_loadu_ps(hi, top + 2 * ow + 16);
            const __m512 b0 = _mm512_maskz_loadu_ps(lo, bottom + 2 * ow),
                         b1 = _mm512_maskz_loadu_ps(hi, bottom + 2 * ow + 16);
            const __m512 a = _mm512_permutex2var_ps(t0, even, t1), b = _mm512_permutex2var_ps(t0, odd, t1);
            const __m512 c = _mm512_permutex2var_ps(b0, even, b1), d = _mm512_permutex2var_ps(b0, odd, b1);
            // greater: ordered and >, false for NaN, as `v > best` in C++
            __mmask16 greater = _mm512_cmp_ps_mask(a, minus_inf, _CMP_GT_OQ);
            __m512 best = _mm512_mask_mov_ps(minus_inf, greater, a);
            greater = _mm512_cmp_ps_mask(b, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, greater, b);
            __m512i where = _mm512_maskz_mov_epi32(greater, _mm512_set1_epi32(1));
            greater = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, greater, c);
            where = _mm512_mask_mov_epi32(where, greater, _mm512_set1_epi32(2));
            greater = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, greater, d);
            where = _mm512_mask_mov_epi32(where, greater, _mm512_set1_epi32(3));
            _mm512_mask_storeu_ps(z + ow, out, best);
            _mm256_mask_storeu_epi16(argmax + ow, out, _mm512_maskz_cvtepi32_epi16(kAll, where));
        }
    }
}

void max_pool_2x2_backward_rows_avx512(const uint16_t* argmax, const float* g, int64_t W, int64_t rows, int64_t Wo,
                                       float* dx) {
    // Window ow's gradient, repeated for its two columns (lanes 2·i, 2·i + 1
    // of the low half from window i, of the high half from window 8 + i), goes
    // where the window's offset matches the lane's: 0, 1 in the top row, 2, 3
    // in the bottom one. A masked add: the other elements are not touched
    // (adding 0 would turn a −0 into +0).
    const __m512i lo = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const __m512i top_k = _mm512_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1);
    const __m512i bottom_k = _mm512_add_epi32(top_k, _mm512_set1_epi32(2));
    for (int64_t r = 0; r < rows; ++r, argmax += Wo, g += Wo) {
        float* top = dx + 2 * r * W;
        float* bottom = top + W;
        for (int64_t ow = 0; ow < Wo; ow += 16) {
            const int64_t windows = std::min<int64_t>(16, Wo - ow);
            const __m512i k = _mm512_maskz_cvtepu16_epi32(kAll, _mm256_maskz_loadu_epi16(first(windows), argmax + ow));
            const __m512 gv = _mm512_maskz_loadu_ps(first(windows), g + ow);
            for (int half = 0; half < 2; ++half) {
                const __mmask16 lanes = first(2 * windows - 16 * half);  // the row's elements in this half
                if (!lanes) break;
                const __m512i pick = half == 0 ? lo : hi;
                const __m512i kk = _mm512_maskz_permutexvar_epi32(kAll, pick, k);
                const __m512 gg = _mm512_maskz_permutexvar_ps(kAll, pick, gv);
                float* t = top + 2 * ow + 16 * half;
                float* b = bottom + 2 * ow + 16 * half;
                const __mmask16 in_top = lanes & _mm512_cmpeq_epi32_mask(kk, top_k);
                const __mmask16 in_bottom = lanes & _mm512_cmpeq_epi32_mask(kk, bottom_k);
                const __m512 tv = _mm512_maskz_loadu_ps(lanes, t), bv = _mm512_maskz_loadu_ps(lanes, b);
                // The sum where the offset matches, the old bits elsewhere; stored
                // whole, or masked to the row at its end (a store masked by the
                // offsets themselves was slower).
                const __m512 tn = _mm512_mask_add_ps(tv, in_top, tv, gg), bn = _mm512_mask_add_ps(bv, in_bottom, bv, gg);
                if (lanes == kAll) {
                    _mm512_storeu_ps(t, tn);
                    _mm512_storeu_ps(b, bn);
                } else {
                    _mm512_mask_storeu_ps(t, lanes, tn);
                    _mm512_mask_storeu_ps(b, lanes, bn);
                }
            }
        }
    }
}

}  // namespace attn::detail
