// The row kernels of additive_score_fused (attention/scores_fast.cpp): one query
// against its n keys, d_w wide. The portable versions are in scores_fast.cpp; the
// AVX-512 ones, the same arithmetic 16 columns at a time, in
// scores_avx512.cpp (float only, x86-64 only; call them only when
// fast_math_path() is avx512). tests/test_scores_fused.cpp compares the two.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.hpp"
#include "tensor/real.hpp"

namespace attn::detail {

// queries B×m×d_q and keys B×n×d_k: rank 3, the same batch size; throws
// naming `who` and both shapes (attention/scores.cpp).
void check_pair(const std::string& who, const Var& queries, const Var& keys);

// t[l, :] = tanh(qb + pk[l, :]) and e[l] = t[l, :]·w for the keys l < n
// (qb = the projected query plus the bias; t is n×d_w).
void additive_row_forward(const real* qb, const real* pk, const real* w, int64_t n, int64_t dw, real* t, real* e);
// Its backward, g[l] = ∂L/∂e[l]: for every key l, δ = g[l]·w ⊙ (1 − t[l, :]²),
//   dq += δ     dk[l, :] += δ     dw_sum += g[l]·t[l, :]
void additive_row_backward(const real* g, const real* t, const real* w, int64_t n, int64_t dw, real* dq, real* dk,
                           real* dw_sum);

void additive_row_forward_avx512(const float* qb, const float* pk, const float* w, int64_t n, int64_t dw, float* t,
                                 float* e);
void additive_row_backward_avx512(const float* g, const float* t, const float* w, int64_t n, int64_t dw, float* dq,
                                  float* dk, float* dw_sum);

}  // namespace attn::detail
