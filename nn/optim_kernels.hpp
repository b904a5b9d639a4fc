// The inner loop of Adam's update, shared by nn/optim.cpp (one value at a
// time) and nn/optim_avx2.cpp (8 at a time: the same operations in the same
// order, up to the last bit). W3 updates 4.1 million
// parameters a step, and the one-by-one loop (a division and a square root per
// value) was a quarter of its step.
#pragma once

#include <cmath>
#include <cstdint>

namespace attn::optim_internal {

struct AdamStep {
    float beta1, beta2, one_minus_beta1, one_minus_beta2;
    float step_size;   // lr / (1 − β1^t)
    float bias2_sqrt;  // √(1 − β2^t)
    float eps;
    float l2;      // Adam's weight decay (added to the gradient); 0 for AdamW
    float shrink;  // AdamW's decoupled decay: p ← (1 − lr·λ) p; 1 for Adam
};

// p, m, v, g at one index, AMSGrad off:
//   d = g + λ p,  m ← β1 m + (1 − β1) d,  v ← β2 v + (1 − β2) d²,  p ← p − s·m / (√v / √(1 − β2^t) + ε)
inline void adam_one(float& p, float g, float& m, float& v, const AdamStep& c) {
    p *= c.shrink;
    const float d = g + c.l2 * p;
    m = m * c.beta1 + c.one_minus_beta1 * d;
    v = v * c.beta2 + c.one_minus_beta2 * d * d;
    p -= c.step_size * m / (std::sqrt(v) / c.bias2_sqrt + c.eps);
}

// The same over n values, 8 at a time (needs AVX2; see optim.cpp's check).
void adam_avx2(float* p, const float* g, float* m, float* v, int64_t n, const AdamStep& c);

}  // namespace attn::optim_internal
