// The kernel-regression view of attention (catalog entries 51–52): Nadaraya–
// Watson pooling, the oldest attention mechanism, and its one-parameter
// trainable version from Dive into Deep Learning.
//
// Nadaraya (1964), On Estimating Regression, Theory of Probability and Its
// Applications; Watson (1964), Smooth Regression Analysis, Sankhyā A. Framed
// as attention pooling in Zhang, Lipton, Li, Smola, Dive into Deep Learning.
//
//     f(x) = Σ_i  K(x − x_i) / Σ_j K(x − x_j)  · y_i
//
// The query x looks up the training inputs x_i (the keys) and returns a
// kernel-weighted average of their targets y_i (the values). With the Gaussian
// kernel K(u) = exp(−u²/2) the weights are a softmax of scores −½(x − x_i)²:
// Nadaraya–Watson pooling is attention with a negative squared distance score.
//
// Shapes (row = position, batch first):
//   queries B×m×p    m query points of p coordinates (p = 1 for the catalog's scalars)
//   keys    B×n×p    n training inputs
//   values  B×n×d_y  their targets
//   mask    B×n key mask, or a keep mask broadcastable to B×m×n (1 = may attend)
//   → output B×m×d_y, weights B×m×n
//
// docs/attention/kernel_regression.md; tests in tests/grad/test_kernel_regression.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"
#include "tensor/random.hpp"

namespace attn {

// The Gaussian kernel's scores: e_{jl} = −½ ‖x_j − x_l‖²       → B×m×n
Var gaussian_kernel_scores(const Var& queries, const Var& keys);

// ---- 51. nadaraya_watson_pooling ------------------------------------------------
//   f(x) = Σ_i softmax_i(−½ ‖x − x_i‖²) y_i
// No parameters. For leave-one-out training pass a mask that hides each
// query's own pair.
AttentionOutput nadaraya_watson_pooling(const Var& queries, const Var& keys, const Var& values,
                                        const Tensor& mask = {});

// ---- 52. parametric_nadaraya_watson_pooling -------------------------------------
//   f(x) = Σ_i softmax_i(−½ ((x − x_i) w)²) y_i       w a trainable scalar
// w multiplies the distance, so it is an inverse bandwidth 1/σ (seed 002 calls
// it the standard deviation). w = 1 gives entry 51, w = 0 the mean of the
// values, and a large w the value of the nearest key. Trained on its own
// training points, w grows without bound (each point is its own best
// predictor): train leave-one-out, with a mask hiding each query's own key.
class ParametricNadarayaWatsonPooling : public AttentionModule {
public:
    // w starts at initial_w (D2L draws it from U(0, 1); pass gen.uniform()).
    explicit ParametricNadarayaWatsonPooling(real initial_w = 1);

    AttentionOutput forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {});

    std::string id() const override { return "parametric_nadaraya_watson_pooling"; }
    Taxonomy taxonomy() const override;

    Var w;  // shape 1
};

}  // namespace attn
