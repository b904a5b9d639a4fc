// LayerNorm (Ba, Kiros & Hinton, "Layer Normalization", 2016), as
// torch.nn.LayerNorm(D): every row is normalised over its last axis on its own.
//
//   μ = (1/D) Σ_k x_k          σ² = (1/D) Σ_k (x_k − μ)²      (biased, as PyTorch)
//   x̂ = (x − μ) / √(σ² + ε)    y  = γ ⊙ x̂ + β
//
// Shapes (row = position): x …×D (B×n×D: each position normalised across its
// D features), γ (weight) D, β (bias) D → y …×D.
//
// Two implementations that a test shows agree in value and gradient:
//   layer_norm        composed from primitive ops; its backward comes for free
//                     (nn/layernorm.cpp)
//   layer_norm_fused  one pass per row, with the backward written by hand
//                     (nn/layernorm_fast.cpp):
//     ∂L/∂x̂ = g ⊙ γ
//     ∂L/∂x  = (1/√(σ² + ε)) · (∂L/∂x̂ − mean(∂L/∂x̂) − x̂ ⊙ mean(∂L/∂x̂ ⊙ x̂))
//     ∂L/∂γ  = Σ_rows g ⊙ x̂          ∂L/∂β = Σ_rows g
// The module uses the composed one unless its `fused` is set (fewer
// temporaries, one pass: what the trainers choose).
//
// Init: γ = 1, β = 0. state_dict keys: "weight", "bias" (with elementwise_affine).
#pragma once

#include <cstdint>
#include <string>

#include "nn/unary_module.hpp"

namespace attn {

// weight and bias may be undefined Vars (no affine transform).
Var layer_norm(const Var& x, const Var& weight, const Var& bias, real eps = real(1e-5));
Var layer_norm_fused(const Var& x, const Var& weight, const Var& bias, real eps = real(1e-5));
// LN(x + r), the Transformer's "Add & Norm" after a sublayer, as one op: the
// same values as layer_norm_fused(x + r) without storing x + r (x and r of
// one shape; ∂L/∂x = ∂L/∂r = the layer norm's input gradient).
Var add_layer_norm_fused(const Var& x, const Var& residual, const Var& weight, const Var& bias,
                         real eps = real(1e-5));

namespace detail {
// The shape checks both versions make (nn/layernorm.cpp): throws naming `op`,
// the weight's, the bias's and the input's shapes.
void check_layer_norm_shapes(const char* op, const Var& x, const Var& weight, const Var& bias);
}  // namespace detail

class LayerNorm : public UnaryModule {
public:
    // normalized_shape: D, the size of the last axis. (PyTorch also accepts
    // several trailing axes; reshape to …×D for that.)
    explicit LayerNorm(int64_t normalized_shape, real eps = real(1e-5), bool elementwise_affine = true);

    Var forward(const Var& x) override;
    // forward(x + residual); with `fused`, add_layer_norm_fused (one op).
    Var add_and_norm(const Var& x, const Var& residual);
    std::string describe() const override;  // "LayerNorm((8,), eps=1e-05, elementwise_affine=true)"

    int64_t normalized_shape() const { return dim_; }
    real eps() const { return eps_; }

    Var weight;  // γ, D; undefined without elementwise_affine
    Var bias;    // β, D
    bool fused = false;  // layer_norm_fused instead of layer_norm (the same values)

protected:
    void on_set_fast(bool on) override { fused = on; }  // Module::set_fast

private:
    void check_input(const Var& x) const;  // x …×D with D = normalized_shape
    int64_t dim_;
    real eps_;
};

}  // namespace attn
