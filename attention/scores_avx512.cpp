// The rows of additive_score_fused (attention/scores_fast.cpp) with AVX-512: the
// same arithmetic as its portable row kernels, 16 columns of d_w at a time,
// each pass over a key row done once (the sum, the tanh, the store of t and
// the product with w in one loop; the backward's three updates in one loop).
// Compiled with the AVX-512 flags (the Makefile, by file name); scores_fast.cpp
// calls these only when the fast-math path is avx512 (tensor/fast_math.hpp),
// and tests/test_scores_fused.cpp checks them against the portable rows.
#include "tensor/fast_math_avx512.hpp"

#include "attention/scores_kernels.hpp"

namespace attn::detail {

namespace {

// The mask of the first `count` (< 16) lanes.
__mmask16 first_lanes(int64_t count) { return static_cast<__mmask16>((1u << count) - 1); }

}  // namespace

void additive_row_forward_avx512(const float* qb, const float* pk, const float* w, int64_t n, int64_t dw, float* t,
                                 float* e) {
    const int64_t full = dw / 16 * 16;
    const __mmask16 tail = first_lanes(dw - full);
    for (int64_t l = 0; l < n; ++l) {
        const float* k = pk + l * dw;
        float* tl = t + l * dw;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t a = 0; a < full; a += 16) {
            const __m512 x = _mm512_add_ps(_mm512_loadu_ps(qb + a), _mm512_loadu_ps(k + a));
            const __m512 th = avx512::tanh16(x);
            _mm512_storeu_ps(tl + a, th);
            acc = _mm512_fmadd_ps(th, _mm512_loadu_ps(w + a), acc);
        }
        if (tail) {
            const __m512 x = _mm512_add_ps(_mm512_maskz_loadu_ps(tail, qb + full), _mm512_maskz_loadu_ps(tail, k + full));
            const __m512 th = avx512::tanh16(x);
            _mm512_mask_storeu_ps(tl + full, tail, th);
            acc = _mm512_fmadd_ps(th, _mm512_maskz_loadu_ps(tail, w + full), acc);  // w = 0 past d_w
        }
        e[l] = _mm512_reduce_add_ps(acc);
    }
}

void additive_row_backward_avx512(const float* g, const float* t, const float* w, int64_t n, int64_t dw, float* dq,
                                  float* dk, float* dw_sum) {
    const int64_t full = dw / 16 * 16;
    const __mmask16 tail = first_lanes(dw - full);
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t l = 0; l < n; ++l) {
        const __m512 G = _mm512_set1_ps(g[l]);
        const float* tl = t + l * dw;
        float* kl = dk + l * dw;
        // δ = G·w ⊙ (1 − t²)     dq += δ     dk_l += δ     dw_sum += G·t
        for (int64_t a = 0; a < full; a += 16) {
            const __m512 th = _mm512_loadu_ps(tl + a);
            const __m512 d = _mm512_mul_ps(_mm512_mul_ps(G, _mm512_loadu_ps(w + a)), _mm512_fnmadd_ps(th, th, one));
            _mm512_storeu_ps(dq + a, _mm512_add_ps(_mm512_loadu_ps(dq + a), d));
            _mm512_storeu_ps(kl + a, _mm512_add_ps(_mm512_loadu_ps(kl + a), d));
            _mm512_storeu_ps(dw_sum + a, _mm512_fmadd_ps(G, th, _mm512_loadu_ps(dw_sum + a)));
        }
        if (tail) {
            const __m512 th = _mm512_maskz_loadu_ps(tail, tl + full);
            const __m512 d = _mm512_mul_ps(_mm512_mul_ps(G, _mm512_maskz_loadu_ps(tail, w + full)),
                                           _mm512_fnmadd_ps(th, th, one));
            _mm512_mask_storeu_ps(dq + full, tail, _mm512_add_ps(_mm512_maskz_loadu_ps(tail, dq + full), d));
            _mm512_mask_storeu_ps(kl + full, tail, _mm512_add_ps(_mm512_maskz_loadu_ps(tail, kl + full), d));
            _mm512_mask_storeu_ps(dw_sum + full, tail,
                                  _mm512_fmadd_ps(G, th, _mm512_maskz_loadu_ps(tail, dw_sum + full)));
        }
    }
}

}  // namespace attn::detail
