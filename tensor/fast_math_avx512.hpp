// exp, tanh and sigmoid of fast_math.hpp on 16 floats in an AVX-512 register,
// for the files compiled for AVX-512 (the Makefile gives *_avx512.cpp the
// flags): tensor/fast_math_avx512.cpp's loops, and kernels that apply them
// inside a fused loop (attention/scores_avx512.cpp). The formulas of the
// scalar versions; two instructions AVX2 lacks make them shorter than
// fast_math_avx2.cpp's:
//   - vscalefps computes er · 2^n, overflowing to +∞ and underflowing through
//     the denormals to 0 exactly as the scalar version's two-halves product
//     does, so neither the halves nor the range fix-ups are needed;
//   - comparisons give mask registers, and a masked move replaces each blend.
// The polynomials are evaluated by FMA, so the last bit may differ from the
// scalar version's; tests/test_fast_math.cpp checks them against std::.
#pragma once

#if !defined(__AVX512F__)
#error "tensor/fast_math_avx512.hpp is for files compiled with the AVX-512 flags (*_avx512.cpp)"
#endif

#include <immintrin.h>

#include <cmath>

#include "tensor/fast_math.hpp"

// GCC 12's AVX-512 intrinsics (max, min, roundscale, scalef) pass
// _mm512_undefined_ps() as the unused merge source, which it then reports as
// "(may be) used uninitialized" in its own header (-O2 and -Og respectively).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::avx512 {

[[gnu::always_inline]] inline __m512 exp16(__m512 x) {
    using namespace fast_math_constants;
    // The clamp keeps the reduction r exact; beyond it e^x is 0 or +∞, which
    // scalef gives by itself (n = −151 or 128 is far enough).
    const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(exp_lo)), _mm512_set1_ps(88.8f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(log2e)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ln2_hi), xc);  // r = x − n·ln 2, in two parts
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ln2_lo), r);
    __m512 p = _mm512_set1_ps(exp_p[0]);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_p[1]));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_p[2]));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_p[3]));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_p[4]));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_p[5]));
    const __m512 er = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512 y = _mm512_scalef_ps(er, n);  // er · 2^n
    // Beyond the scalar version's range its results exactly: +∞ above
    // 88.72284 (≈ ln FLT_MAX), 0 below −104; and NaN in, NaN out (max and min
    // replaced it above).
    const __mmask16 over = _mm512_cmp_ps_mask(x, _mm512_set1_ps(exp_hi), _CMP_GT_OQ);
    const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(exp_lo), _CMP_LT_OQ);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __m512 out = _mm512_mask_mov_ps(y, over, _mm512_set1_ps(INFINITY));
    out = _mm512_mask_mov_ps(out, under, _mm512_setzero_ps());
    return _mm512_mask_mov_ps(out, nan, x);
}

[[gnu::always_inline]] inline __m512 tanh16(__m512 x) {
    using namespace fast_math_constants;
    const __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(tanh_q[0]);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(tanh_q[1]));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(tanh_q[2]));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(tanh_q[3]));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(tanh_q[4]));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, z), p, x);
    const __m512 a = _mm512_abs_ps(x);
    const __m512 e = exp16(_mm512_add_ps(a, a));
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 large = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
    // the sign of x on large (≥ 0), then the polynomial where |x| < 0.625
    const __m512 signed_large = _mm512_or_ps(large, _mm512_and_ps(x, _mm512_set1_ps(-0.0f)));
    return _mm512_mask_mov_ps(signed_large, _mm512_cmp_ps_mask(a, _mm512_set1_ps(tanh_small), _CMP_LT_OQ), small);
}

[[gnu::always_inline]] inline __m512 sigmoid16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

}  // namespace attn::avx512
