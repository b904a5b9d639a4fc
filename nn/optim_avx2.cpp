// Adam's update 8 values at a time (nn/optim_kernels.hpp): adam_one's
// operations in the same order, without FMA, so the results are the same bits.
// Compiled with -mavx2 -mfma (the Makefile, by file name).
#include <immintrin.h>

#include "nn/optim_kernels.hpp"

namespace attn::optim_internal {

void adam_avx2(float* p, const float* g, float* m, float* v, int64_t n, const AdamStep& c) {
    const __m256 beta1 = _mm256_set1_ps(c.beta1), beta2 = _mm256_set1_ps(c.beta2);
    const __m256 omb1 = _mm256_set1_ps(c.one_minus_beta1), omb2 = _mm256_set1_ps(c.one_minus_beta2);
    const __m256 step = _mm256_set1_ps(c.step_size), bias2 = _mm256_set1_ps(c.bias2_sqrt);
    const __m256 eps = _mm256_set1_ps(c.eps), l2 = _mm256_set1_ps(c.l2), shrink = _mm256_set1_ps(c.shrink);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 pv = _mm256_mul_ps(_mm256_loadu_ps(p + i), shrink);
        const __m256 d = _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_mul_ps(l2, pv));
        const __m256 mv = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + i), beta1), _mm256_mul_ps(omb1, d));
        const __m256 vv =
            _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), beta2), _mm256_mul_ps(_mm256_mul_ps(omb2, d), d));
        const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), bias2), eps);
        pv = _mm256_sub_ps(pv, _mm256_div_ps(_mm256_mul_ps(step, mv), denom));
        _mm256_storeu_ps(p + i, pv);
        _mm256_storeu_ps(m + i, mv);
        _mm256_storeu_ps(v + i, vv);
    }
    for (; i < n; ++i) adam_one(p[i], g[i], m[i], v[i], c);
}

}  // namespace attn::optim_internal
