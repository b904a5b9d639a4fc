// LayerNorm as the formula (layer_norm, composed from primitive ops) and the
// module; the one-pass kernel with its hand-written backward, chosen by the
// module's set_fast, is in nn/layernorm_fast.cpp.
#include "nn/layernorm.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "autograd/ops.hpp"

namespace attn {

// x …×D → μ …×1 → x − μ …×D → σ² …×1 → x̂ …×D → γ ⊙ x̂ + β …×D
Var layer_norm(const Var& x, const Var& weight, const Var& bias, real eps) {
    detail::check_layer_norm_shapes("layer_norm", x, weight, bias);
    Var mu = mean(x, -1, /*keepdim=*/true);
    Var centred = x - mu;
    Var var = mean(square(centred), -1, /*keepdim=*/true);
    Var y = centred / sqrt(var + eps);
    if (weight.defined()) y = y * weight;
    if (bias.defined()) y = y + bias;
    return y;
}

void detail::check_layer_norm_shapes(const char* op, const Var& x, const Var& weight, const Var& bias) {
    if (x.rank() < 1)
        throw std::invalid_argument(std::string(op) + ": input must have at least one axis, got a scalar");
    const Shape d{x.size(-1)};
    if ((weight.defined() && weight.shape() != d) || (bias.defined() && bias.shape() != d))
        throw std::invalid_argument(std::string(op) + ": weight " +
                                    (weight.defined() ? weight.shape().str() : "(none)") + " and bias " +
                                    (bias.defined() ? bias.shape().str() : "(none)") + " must have shape " +
                                    d.str() + ", the last axis of input " + x.shape().str());
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

void LayerNorm::check_input(const Var& x) const {
    if (x.rank() < 1 || x.size(-1) != dim_)
        throw std::invalid_argument("LayerNorm: input " + x.shape().str() + " needs " + std::to_string(dim_) +
                                    " features on its last axis (normalized_shape = " + std::to_string(dim_) + ")");
}

Var LayerNorm::forward(const Var& x) {
    check_input(x);
    return fused ? layer_norm_fused(x, weight, bias, eps_) : layer_norm(x, weight, bias, eps_);
}

Var LayerNorm::add_and_norm(const Var& x, const Var& residual) {
    if (!fused) return forward(x + residual);
    check_input(x);
    return add_layer_norm_fused(x, residual, weight, bias, eps_);
}

std::string LayerNorm::describe() const {
    char eps[32];
    std::snprintf(eps, sizeof eps, "%g", static_cast<double>(eps_));
    return "LayerNorm((" + std::to_string(dim_) + ",), eps=" + eps +
           ", elementwise_affine=" + (weight.defined() ? "true" : "false") + ")";
}

}  // namespace attn
