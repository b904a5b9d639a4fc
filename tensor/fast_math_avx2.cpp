// exp, tanh and sigmoid of fast_math.hpp, 8 floats at a time: the same
// formulas, line for line, in AVX2 registers (the polynomials by FMA, so the
// last bit may differ from the scalar version's; tests/test_fast_math.cpp
// checks both against std::). Compiled with -mavx2 -mfma (the Makefile, by
// file name); fast_math.cpp calls it only when CPUID has both.
#include <immintrin.h>

#include "tensor/fast_math.hpp"

namespace attn {
namespace {

using namespace fast_math_constants;

[[gnu::always_inline]] inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(exp_lo), hi = _mm256_set1_ps(exp_hi);
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);  // max_ps(NaN, lo) = lo: finite
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(log2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ln2_hi), xc);  // r = x − n·ln 2, in two parts
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ln2_lo), r);
    __m256 p = _mm256_set1_ps(exp_p[0]);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[1]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[2]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[3]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[4]));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[5]));
    const __m256 er = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i k = _mm256_cvtps_epi32(n);
    const __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);  // 2^n = 2^k1 · 2^k2
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(er, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN in, NaN out
}

[[gnu::always_inline]] inline __m256 tanh8(__m256 x) {
    const __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(tanh_q[0]);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(tanh_q[1]));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(tanh_q[2]));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(tanh_q[3]));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(tanh_q[4]));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x, z), p, x);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 a = _mm256_andnot_ps(sign, x);  // |x|
    const __m256 e = exp8(_mm256_add_ps(a, a));
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    large = _mm256_or_ps(large, _mm256_and_ps(x, sign));  // the sign of x (large ≥ 0)
    return _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(tanh_small), _CMP_LT_OQ));
}

[[gnu::always_inline]] inline __m256 sigmoid8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// out = f8(in) 8 at a time; the tail through a zero-padded block.
template <class F8>
void apply8(const float* in, float* out, int64_t n, F8 f8) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f8(_mm256_loadu_ps(in + i)));
    if (i < n) {
        alignas(32) float block[8] = {};
        for (int64_t j = 0; j < n - i; ++j) block[j] = in[i + j];
        _mm256_store_ps(block, f8(_mm256_load_ps(block)));
        for (int64_t j = 0; j < n - i; ++j) out[i + j] = block[j];
    }
}

}  // namespace

// (Each function is handed over as a lambda, whose type is its own, and
// forced inline: handed over by name it is a pointer to a function, and left
// to itself GCC called exp8 and tanh8 for every 8 values, at about a third of
// the speed.)
void exp_avx2(const float* in, float* out, int64_t n) {
    apply8(in, out, n, [](__m256 x) { return exp8(x); });
}
void tanh_avx2(const float* in, float* out, int64_t n) {
    apply8(in, out, n, [](__m256 x) { return tanh8(x); });
}
void sigmoid_avx2(const float* in, float* out, int64_t n) {
    apply8(in, out, n, [](__m256 x) { return sigmoid8(x); });
}

}  // namespace attn
