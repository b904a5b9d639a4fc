#include "nn/layernorm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

void check_shapes(const char* op, const Var& x, const Var& weight, const Var& bias) {
    if (x.rank() < 1)
        throw std::invalid_argument(std::string(op) + ": input must have at least one axis, got a scalar");
    const Shape d{x.size(-1)};
    if ((weight.defined() && weight.shape() != d) || (bias.defined() && bias.shape() != d))
        throw std::invalid_argument(std::string(op) + ": weight " +
                                    (weight.defined() ? weight.shape().str() : "(none)") + " and bias " +
                                    (bias.defined() ? bias.shape().str() : "(none)") + " must have shape " +
                                    d.str() + ", the last axis of input " + x.shape().str());
}

// Σ_k f(k) for k < D in double, in eight interleaved partial sums: rows
// can be long, so the sums are double, and one chain of double additions
// would wait for each addition to finish before the next (eight chains keep
// the adder busy; docs/performance.md).
template <class F>
double sum8(int64_t D, F f) {
    double part[8] = {};
    int64_t k = 0;
    for (; k + 8 <= D; k += 8)
        for (int j = 0; j < 8; ++j) part[j] += f(k + j);
    for (; k < D; ++k) part[0] += f(k);
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// The two kernels of the fused op, row by row (llm.c's layernorm_forward /
// layernorm_backward), the rows split over the threads. Shapes: x, y, xhat
// N×D; gamma, beta D; rstd N.
void layer_norm_forward_rows(const real* x, const real* gamma, const real* beta, real eps, int64_t N, int64_t D,
                             real* y, real* xhat, real* rstd) {
    parallel_for(0, N, parallel_grain(4 * D), [=](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const real* row = x + r * D;
            const double mu = sum8(D, [row](int64_t k) { return static_cast<double>(row[k]); }) / static_cast<double>(D);
            const double var = sum8(D, [row, mu](int64_t k) { return (row[k] - mu) * (row[k] - mu); }) /
                               static_cast<double>(D);
            const real s = static_cast<real>(1.0 / std::sqrt(var + static_cast<double>(eps)));  // 1/√(σ² + ε)
            rstd[r] = s;
            for (int64_t k = 0; k < D; ++k) {
                xhat[r * D + k] = static_cast<real>(row[k] - mu) * s;
                y[r * D + k] = gamma[k] * xhat[r * D + k] + beta[k];
            }
        }
    });
}

// Adds to dx (N×D), dgamma and dbeta (D); a null pointer skips that gradient.
// The rows go in `blocks` contiguous blocks over the threads: dx row by row;
// dgamma and dbeta sum over the rows, each block into a row of its own, then
// the blocks in order, so the bits depend on the block count alone.
void layer_norm_backward_rows(const real* g, const real* xhat, const real* rstd, const real* gamma, int64_t N,
                              int64_t D, real* dx, real* dgamma, real* dbeta) {
    const int64_t blocks = std::max(parallel_chunks(0, N, parallel_grain(4 * D)), 1);
    std::vector<real> sums(static_cast<size_t>(2 * blocks * D), real(0));  // per block: [Σ g ⊙ x̂ | Σ g]
    auto block = [&](int64_t b) {
        real* sum_gh = sums.data() + 2 * b * D;
        real* sum_g = sum_gh + D;
        for (int64_t r = N * b / blocks; r < N * (b + 1) / blocks; ++r) {
            const real *gr = g + r * D, *hr = xhat + r * D;
            if (dx) {  // with ∂L/∂x̂ = g ⊙ γ: Σ ∂L/∂x̂ and Σ ∂L/∂x̂ ⊙ x̂ over the row
                const double sum_dh = sum8(D, [=](int64_t k) { return static_cast<double>(gr[k] * gamma[k]); });
                const double sum_dh_h =
                    sum8(D, [=](int64_t k) { return static_cast<double>(gr[k] * gamma[k] * hr[k]); });
                const real mean_dh = static_cast<real>(sum_dh / static_cast<double>(D));
                const real mean_dh_h = static_cast<real>(sum_dh_h / static_cast<double>(D));
                for (int64_t k = 0; k < D; ++k)
                    dx[r * D + k] += rstd[r] * (gr[k] * gamma[k] - mean_dh - hr[k] * mean_dh_h);
            }
            for (int64_t k = 0; k < D; ++k) sum_gh[k] += gr[k] * hr[k];
            for (int64_t k = 0; k < D; ++k) sum_g[k] += gr[k];
        }
    };
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) block(b);
    });
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t k = 0; k < D; ++k) {
            if (dgamma) dgamma[k] += sums[static_cast<size_t>(2 * b * D + k)];
            if (dbeta) dbeta[k] += sums[static_cast<size_t>((2 * b + 1) * D + k)];
        }
}

}  // namespace

// x …×D → μ …×1 → x − μ …×D → σ² …×1 → x̂ …×D → γ ⊙ x̂ + β …×D
Var layer_norm(const Var& x, const Var& weight, const Var& bias, real eps) {
    check_shapes("layer_norm", x, weight, bias);
    Var mu = mean(x, -1, /*keepdim=*/true);
    Var centred = x - mu;
    Var var = mean(square(centred), -1, /*keepdim=*/true);
    Var y = centred / sqrt(var + eps);
    if (weight.defined()) y = y * weight;
    if (bias.defined()) y = y + bias;
    return y;
}

// x …×D → y …×D, one pass per row; forward keeps x̂ and 1/√(σ² + ε) for the backward.
Var layer_norm_fused(const Var& x, const Var& weight, const Var& bias, real eps) {
    const ProfileScope scope("layer_norm_fused");
    check_shapes("layer_norm_fused", x, weight, bias);
    const int64_t D = x.size(-1), N = x.numel() / D;
    const Var gamma = weight.defined() ? weight : Var(Tensor::ones({D}));  // no affine: γ = 1, β = 0
    const Var beta = bias.defined() ? bias : Var(Tensor::zeros({D}));
    Tensor y = Tensor::empty(x.shape()), xhat = Tensor::empty(x.shape()), rstd = Tensor::empty({N});
    layer_norm_forward_rows(x.value().data(), gamma.value().data(), beta.value().data(), eps, N, D, y.data(),
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

LayerNorm::LayerNorm(int64_t normalized_shape, real eps, bool elementwise_affine)
    : dim_(normalized_shape), eps_(eps) {
    if (normalized_shape <= 0)
        throw std::invalid_argument("LayerNorm: normalized_shape must be positive, got " +
                                    std::to_string(normalized_shape));
    if (!(eps >= 0)) throw std::invalid_argument("LayerNorm: eps must be >= 0");
    if (elementwise_affine) {
        weight = register_parameter("weight", Tensor::ones({normalized_shape}));
        bias = register_parameter("bias", Tensor::zeros({normalized_shape}));
    }
}

Var LayerNorm::forward(const Var& x) {
    if (x.rank() < 1 || x.size(-1) != dim_)
        throw std::invalid_argument("LayerNorm: input " + x.shape().str() + " needs " + std::to_string(dim_) +
                                    " features on its last axis (normalized_shape = " + std::to_string(dim_) + ")");
    return fused ? layer_norm_fused(x, weight, bias, eps_) : layer_norm(x, weight, bias, eps_);
}

std::string LayerNorm::describe() const {
    char eps[32];
    std::snprintf(eps, sizeof eps, "%g", static_cast<double>(eps_));
    return "LayerNorm((" + std::to_string(dim_) + ",), eps=" + eps +
           ", elementwise_affine=" + (weight.defined() ? "true" : "false") + ")";
}

}  // namespace attn
