// LayerNorm's fast twin (nn/layernorm.hpp): layer_norm_fused and
// add_layer_norm_fused, one pass per row with the backward written by hand.
// The formula itself, the one to read, is layer_norm in nn/layernorm.cpp;
// tests/test_nn_layers.cpp checks that the two agree.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "nn/layernorm.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"
#include "tensor/row_blocks.hpp"

namespace attn {

namespace {

// Σ_k f(k) for k < D. Within a chunk of 1024 terms the sum runs in sixteen
// interleaved partial sums of the element type: sixteen independent chains,
// which the compiler keeps in vector registers and adds four at a time. At
// the end of a chunk the sixteen are added pairwise (16 → 8 → 4 → 1, a chain
// of four additions where one running sum would wait on sixteen), and the
// chunks are added in double, so that a long row's sum stays accurate.
template <class F>
double sum_row(int64_t D, F f) {
    constexpr int64_t kChunk = 1024, kLanes = 16;
    static_assert(kLanes == 16, "the pairwise addition below is written out for sixteen lanes");
    double total = 0;
    for (int64_t k0 = 0; k0 < D; k0 += kChunk) {
        const int64_t k1 = std::min(D, k0 + kChunk);
        real part[kLanes] = {};
        int64_t k = k0;
        for (; k + kLanes <= k1; k += kLanes)
#pragma GCC unroll 16  // unrolled, the partial sums live in vector registers, not in memory
            for (int64_t j = 0; j < kLanes; ++j) part[j] += f(k + j);
        for (; k < k1; ++k) part[0] += f(k);
        real half[kLanes / 2], quarter[kLanes / 4];
        for (int64_t j = 0; j < kLanes / 2; ++j) half[j] = part[j] + part[j + kLanes / 2];
        for (int64_t j = 0; j < kLanes / 4; ++j) quarter[j] = half[j] + half[j + kLanes / 4];
        total += static_cast<double>((quarter[0] + quarter[2]) + (quarter[1] + quarter[3]));
    }
    return total;
}

// The two kernels of the fused op, row by row (llm.c's layernorm_forward /
// layernorm_backward), the rows split over the threads. Shapes: x, y, xhat
// N×D; gamma, beta D; rstd N. A row's work is a function of its own whose
// arrays are distinct (`__restrict`): with that promise, and the pointers in
// locals rather than in a lambda's captures, the loops compile to vector
// instructions.

// One row: x̂ = (x − μ)/√(σ² + ε) and y = γ ⊙ x̂ + β; returns 1/√(σ² + ε).
// (σ² is a mean of squares, so its float rounding is harmless: 1/√ in float.)
real normalize_row(const real* __restrict x, const real* __restrict gamma, const real* __restrict beta, real eps,
                   int64_t D, real* __restrict y, real* __restrict xhat) {
    const real mu = static_cast<real>(sum_row(D, [x](int64_t k) { return x[k]; }) / static_cast<double>(D));
    const double var = sum_row(D, [x, mu](int64_t k) { return (x[k] - mu) * (x[k] - mu); }) / static_cast<double>(D);
    const real s = 1 / std::sqrt(static_cast<real>(var) + eps);
    for (int64_t k = 0; k < D; ++k) {
        xhat[k] = (x[k] - mu) * s;
        y[k] = gamma[k] * xhat[k] + beta[k];
    }
    return s;
}

// s = x + r on one row, with add's arithmetic (one float addition each).
void add_row(const real* __restrict x, const real* __restrict r, int64_t D, real* __restrict s) {
    for (int64_t k = 0; k < D; ++k) s[k] = x[k] + r[k];
}

// Normalises the rows of x, or of x + residual when residual is not null
// (the sum made a row at a time in a buffer of one row, never stored).
void layer_norm_forward_rows(const real* x, const real* residual, const real* gamma, const real* beta, real eps,
                             int64_t N, int64_t D, real* y, real* xhat, real* rstd) {
    parallel_for(0, N, parallel_grain(4 * D), [=](int64_t r0, int64_t r1) {
        std::vector<real> sum(residual ? static_cast<size_t>(D) : 0);
        for (int64_t r = r0; r < r1; ++r) {
            const real* row = x + r * D;
            if (residual) {
                add_row(row, residual + r * D, D, sum.data());  // x + r, as add makes it
                row = sum.data();
            }
            rstd[r] = normalize_row(row, gamma, beta, eps, D, y + r * D, xhat + r * D);
        }
    });
}

// γ and β as the fused ops use them: the given ones, or 1 and 0 without an affine transform.
std::pair<Var, Var> affine_or_identity(const Var& weight, const Var& bias, int64_t D) {
    return {weight.defined() ? weight : Var(Tensor::ones({D})), bias.defined() ? bias : Var(Tensor::zeros({D}))};
}

// One row's ∂L/∂x added to dx, with ∂L/∂x̂ = g ⊙ γ and s = 1/√(σ² + ε):
// dx += s (∂L/∂x̂ − mean(∂L/∂x̂) − x̂ ⊙ mean(∂L/∂x̂ ⊙ x̂)).
void backward_row(const real* __restrict g, const real* __restrict xhat, real s, const real* __restrict gamma,
                  int64_t D, real* __restrict dx) {
    const real mean_dh = static_cast<real>(sum_row(D, [=](int64_t k) { return g[k] * gamma[k]; }) / static_cast<double>(D));
    const real mean_dh_h =
        static_cast<real>(sum_row(D, [=](int64_t k) { return g[k] * gamma[k] * xhat[k]; }) / static_cast<double>(D));
    for (int64_t k = 0; k < D; ++k) dx[k] += s * (g[k] * gamma[k] - mean_dh - xhat[k] * mean_dh_h);
}

// One row's share of ∂L/∂γ and ∂L/∂β: sum_gh += g ⊙ x̂, sum_g += g.
void affine_sums_row(const real* __restrict g, const real* __restrict xhat, int64_t D, real* __restrict sum_gh,
                     real* __restrict sum_g) {
    for (int64_t k = 0; k < D; ++k) {
        sum_gh[k] += g[k] * xhat[k];
        sum_g[k] += g[k];
    }
}

// Adds to dx (N×D), dgamma and dbeta (D); a null pointer skips that gradient.
// One pass over the rows: dx row by row, and Σ g ⊙ x̂ and Σ g down the rows
// side by side as one sum 2D wide, in the fixed blocks of
// tensor/row_blocks.hpp (split over the threads, the same bits on any number).
void layer_norm_backward_rows(const real* g, const real* xhat, const real* rstd, const real* gamma, int64_t N,
                              int64_t D, real* dx, real* dgamma, real* dbeta) {
    std::vector<real> sums(static_cast<size_t>(2 * D));  // [Σ g ⊙ x̂ | Σ g]
    sum_rows_in_blocks(N, 2 * D, sums.data(), [=](int64_t r, real* block_sums) {
        if (dx) backward_row(g + r * D, xhat + r * D, rstd[r], gamma, D, dx + r * D);
        affine_sums_row(g + r * D, xhat + r * D, D, block_sums, block_sums + D);
    });
    for (int64_t k = 0; k < D; ++k) {
        if (dgamma) dgamma[k] += sums[static_cast<size_t>(k)];
        if (dbeta) dbeta[k] += sums[static_cast<size_t>(D + k)];
    }
}

}  // namespace

// x …×D → y …×D, one pass per row; forward keeps x̂ and 1/√(σ² + ε) for the backward.
Var layer_norm_fused(const Var& x, const Var& weight, const Var& bias, real eps) {
    const ProfileScope scope("layer_norm_fused");
    detail::check_layer_norm_shapes("layer_norm_fused", x, weight, bias);
    const int64_t D = x.size(-1), N = x.numel() / D;
    const auto [gamma, beta] = affine_or_identity(weight, bias, D);
    Tensor y = Tensor::empty(x.shape()), xhat = Tensor::empty(x.shape()), rstd = Tensor::empty({N});
    layer_norm_forward_rows(x.value().data(), nullptr, gamma.value().data(), beta.value().data(), eps, N, D, y.data(),
                            xhat.data(), rstd.data());
    return record("layer_norm_fused", std::move(y), {x, gamma, beta},
                  [xhat, rstd, gamma_values = gamma.value(), N, D](Backward& bw) {
                      real* dx = bw.needs(0) ? bw.grad_buffer(0).data() : nullptr;
                      real* dgamma = bw.needs(1) ? bw.grad_buffer(1).data() : nullptr;
                      real* dbeta = bw.needs(2) ? bw.grad_buffer(2).data() : nullptr;
                      layer_norm_backward_rows(bw.grad().data(), xhat.data(), rstd.data(), gamma_values.data(), N, D, dx,
                                               dgamma, dbeta);
                  });
}

// LN(x + r) …×D, the sum made row by row in a buffer of one row and never
// stored; forward keeps x̂ and 1/√(σ² + ε), as layer_norm_fused, whose
// backward gives ∂L/∂(x + r), which is both ∂L/∂x and ∂L/∂r.
Var add_layer_norm_fused(const Var& x, const Var& residual, const Var& weight, const Var& bias, real eps) {
    const ProfileScope scope("add_layer_norm_fused");
    detail::check_layer_norm_shapes("add_layer_norm_fused", x, weight, bias);
    if (!residual.defined() || residual.shape() != x.shape())
        throw std::invalid_argument("add_layer_norm_fused: input " + x.shape().str() + " and residual " +
                                    (residual.defined() ? residual.shape().str() : std::string("(undefined)")) +
                                    " must have the same shape");
    const int64_t D = x.size(-1), N = x.numel() / D;
    const auto [gamma, beta] = affine_or_identity(weight, bias, D);
    Tensor y = Tensor::empty(x.shape()), xhat = Tensor::empty(x.shape()), rstd = Tensor::empty({N});
    layer_norm_forward_rows(x.value().data(), residual.value().data(), gamma.value().data(), beta.value().data(), eps,
                            N, D, y.data(), xhat.data(), rstd.data());
    return record("add_layer_norm_fused", std::move(y), {x, residual, gamma, beta},
                  [xhat, rstd, gamma_values = gamma.value(), N, D](Backward& bw) {
                      const bool to_x = bw.needs(0), to_residual = bw.needs(1);
                      Tensor d = to_x || to_residual ? Tensor::zeros(xhat.shape()) : Tensor();  // ∂L/∂(x + r)
                      real* dgamma = bw.needs(2) ? bw.grad_buffer(2).data() : nullptr;
                      real* dbeta = bw.needs(3) ? bw.grad_buffer(3).data() : nullptr;
                      layer_norm_backward_rows(bw.grad().data(), xhat.data(), rstd.data(), gamma_values.data(), N, D,
                                               d.defined() ? d.data() : nullptr, dgamma, dbeta);
                      if (to_x && to_residual) bw.accumulate(0, d);
                      if (to_residual) bw.accumulate(1, std::move(d));
                      else if (to_x) bw.accumulate(0, std::move(d));
                  });
}

}  // namespace attn
