// Adam's update 8 values at a time (nn/optim_kernels.hpp): adam_one's
// operations in the same order (the compiler may fuse a multiply-add, so the
// last bit may differ from the scalar loop; every value, tail included, goes
// through the same block, so the thread count never changes the result).
// Compiled with -mavx2 -mfma (the Makefile, by file name).
#include <immintrin.h>

#include "nn/optim_kernels.hpp"

namespace attn::optim_internal {

void adam_avx2(float* p, const float* g, float* m, float* v, int64_t n, const AdamStep& c) {
    const __m256 beta1 = _mm256_set1_ps(c.beta1), beta2 = _mm256_set1_ps(c.beta2);
    const __m256 omb1 = _mm256_set1_ps(c.one_minus_beta1), omb2 = _mm256_set1_ps(c.one_minus_beta2);
    const __m256 step = _mm256_set1_ps(c.step_size), bias2 = _mm256_set1_ps(c.bias2_sqrt);
    const __m256 eps = _mm256_set1_ps(c.eps), l2 = _mm256_set1_ps(c.l2), shrink = _mm256_set1_ps(c.shrink);
    // one block of 8 at p, g, m, v (the loads and stores as given)
    auto block = [&](float* pb, const float* gb, float* mb, float* vb) {
        __m256 pv = _mm256_mul_ps(_mm256_loadu_ps(pb), shrink);
        const __m256 d = _mm256_add_ps(_mm256_loadu_ps(gb), _mm256_mul_ps(l2, pv));
        const __m256 mv = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(mb), beta1), _mm256_mul_ps(omb1, d));
        const __m256 vv =
            _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(vb), beta2), _mm256_mul_ps(_mm256_mul_ps(omb2, d), d));
        const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), bias2), eps);
        pv = _mm256_sub_ps(pv, _mm256_div_ps(_mm256_mul_ps(step, mv), denom));
        _mm256_storeu_ps(pb, pv);
        _mm256_storeu_ps(mb, mv);
        _mm256_storeu_ps(vb, vv);
    };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) block(p + i, g + i, m + i, v + i);
    if (i < n) {  // the tail through zero-padded copies (no scalar code here: it could be contracted to FMA)
        float pt[8] = {}, gt[8] = {}, mt[8] = {}, vt[8] = {};
        for (int64_t j = 0; j < n - i; ++j) pt[j] = p[i + j], gt[j] = g[i + j], mt[j] = m[i + j], vt[j] = v[i + j];
        block(pt, gt, mt, vt);
        for (int64_t j = 0; j < n - i; ++j) p[i + j] = pt[j], m[i + j] = mt[j], v[i + j] = vt[j];
    }
}

}  // namespace attn::optim_internal
