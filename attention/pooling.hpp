// The operators seed 003 compares with attention (catalog entries 74–80):
// pooling, which summarises many vectors with a fixed rule instead of learned
// weights, set functions, and the GRU's gates, which weigh features without
// any competition between positions.
//
//   74 sum_mean_max_pooling      classic           Σ, mean or max over the rows
//   75 k_max_pooling             Kalchbrenner+ 2014 the k largest per feature, in order
//   76 chunk_max_pooling         (no canonical paper) the max of each of c chunks
//   77 stochastic_pooling        Zeiler & Fergus 2013 sample a window element ∝ its value
//   78 spatial_pyramid_pooling   He+ 2014          max over b×b bins, fixed length for any H, W
//   79 deep_sets_pooling         Zaheer+ 2017      ρ(Σ φ(x_i)), and the equivariant layer
//   80 gru_gating                Cho+ 2014         the GRU's update and reset gates
//
// Shapes (row = position, batch first):
//   sets and sequences X B×n×d with a B×n key mask (1 = keep; undefined = all)
//   images U B×C×H×W
//
// docs/attention/pooling.md; tests in tests/grad/test_pooling.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "nn/linear.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 74. sum_mean_max_pooling --------------------------------------------------------------
// Boureau, Ponce, LeCun (2010), A Theoretical Analysis of Feature Pooling in
// Visual Recognition, ICML.
//   sum = Σ_i X_i,   mean = (1/n) Σ_i X_i,   max_k = max_i X_ik   over kept rows
// X B×n×d, mask B×n → B×d. A set with no kept row gives 0. The max's gradient
// goes to the arg-max row of each feature, the first one on a tie.
Var sum_pooling(const Var& X, const Tensor& mask = {});
Var mean_pooling(const Var& X, const Tensor& mask = {});
Var max_pooling(const Var& X, const Tensor& mask = {});

struct SumMeanMaxPooled {
    Var sum, mean, max;  // each B×d
};
SumMeanMaxPooled sum_mean_max_pooling(const Var& X, const Tensor& mask = {});

// ---- 75. k_max_pooling ---------------------------------------------------------------------
// Kalchbrenner, Grefenstette, Blunsom (2014), A Convolutional Neural Network
// for Modelling Sentences, ACL.
// For each feature column, the k largest values of the kept rows in their
// original order (ties: the earlier row wins); fewer than k kept rows are
// zero-padded at the end. X B×n×d, mask B×n → B×k×d. The gradient flows to
// the kept values (a gather).
Var k_max_pooling(const Var& X, int64_t k, const Tensor& mask = {});
// Dynamic k for layer ℓ of L and sentence length s: max(k_top, ⌈(L − ℓ)/L · s⌉).
int64_t dynamic_k(int64_t k_top, int64_t layer, int64_t num_layers, int64_t length);

// ---- 76. chunk_max_pooling -----------------------------------------------------------------
// No canonical paper; closest: Chen+ (2015) dynamic multi-pooling, Zeng+ (2015)
// piecewise pooling. The kept positions of each sequence are split into c
// contiguous chunks, the first (n mod c) one longer; each chunk is max-pooled.
// X B×n×d, mask B×n → B×c×d (a chunk with no position gives 0).
Var chunk_max_pooling(const Var& X, int64_t chunks, const Tensor& mask = {});
// Caller-given chunk boundaries 0 = b_0 < b_1 < … < b_c = n, shared by the batch
// (piecewise pooling): chunk j is rows b_j … b_{j+1} − 1.
Var chunk_max_pooling(const Var& X, const std::vector<int64_t>& boundaries);

// ---- 77. stochastic_pooling ----------------------------------------------------------------
// Zeiler & Fergus (2013), Stochastic Pooling for Regularization of Deep
// Convolutional Neural Networks, ICLR.
//   p_i = a_i / Σ_{k∈R_j} a_k                     in each window R_j (a ≥ 0, after ReLU)
//   training: s_j = a_l,  l ~ Multinomial(p)      (the gradient goes to a_l)
//   test:     s_j = Σ_{i∈R_j} p_i a_i             (the probability-weighted average)
// An all-zero window gives 0. U B×C×H×W (nonnegative; a negative value throws)
// → B×C×Ho×Wo as max_pool2d; stride 0 means the kernel size.
Var stochastic_pooling(const Var& U, Size2 kernel, Size2 stride, Generator& gen, bool training);

// ---- 78. spatial_pyramid_pooling -----------------------------------------------------------
// He, Zhang, Ren, Sun (2014), Spatial Pyramid Pooling in Deep Convolutional
// Networks for Visual Recognition, ECCV.
// Level b has b×b bins; bin u of a side of length a covers ⌊u·a/b⌋ … ⌈(u+1)·a/b⌉ − 1,
// so the bins always cover the whole map. Each bin is max-pooled; the levels
// are concatenated. U B×C×H×W (any H, W ≥ the largest b) → B×(C·Σ b²), level by
// level, channel-major within a level (torch's view of a B×C×b×b map).
Var spatial_pyramid_pooling(const Var& U, const std::vector<int64_t>& levels);

// The rows (or columns) [start, end) of bin u of b on a side of length a.
struct PyramidBin {
    int64_t start, end;
};
PyramidBin pyramid_bin(int64_t u, int64_t b, int64_t a);

// ---- 79. deep_sets_pooling -----------------------------------------------------------------
// Zaheer, Kottur, Ravanbakhsh, Póczos, Salakhutdinov, Smola (2017), Deep Sets,
// NeurIPS; Qi, Su, Mo, Guibas (2017), PointNet, CVPR (the max variant).
//   f(X) = ρ(⊕_i φ(x_i)),   ⊕ = Σ, mean or max over the kept rows
// φ: Linear d→h, ReLU, Linear h→h, ReLU ("phi1", "phi2"); ρ: Linear h→h, ReLU,
// Linear h→d_out ("rho1", "rho2"). X B×n×d, mask B×n → B×d_out.
enum class SetAggregate { sum, mean, max };

class DeepSetsPooling : public AttentionModule {
public:
    DeepSetsPooling(int64_t in_dim, int64_t hidden, int64_t out_dim, Generator& gen,
                    SetAggregate aggregate = SetAggregate::sum);

    Var forward(const Var& X, const Tensor& mask = {});

    std::string id() const override { return "deep_sets_pooling"; }
    Taxonomy taxonomy() const override;

    Linear phi1, phi2, rho1, rho2;

private:
    SetAggregate aggregate_;
};

// The permutation-equivariant layer of Deep Sets:
//   Y = tanh(X Λ + 1 1ᵀ X Γ)        (1 1ᵀ X: every row gets the set's sum; or its max)
// Λ, Γ d×d'. X B×n×d, mask B×n → B×n×d' (masked rows give 0).
class DeepSetsEquivariant : public Module {
public:
    DeepSetsEquivariant(int64_t in_dim, int64_t out_dim, Generator& gen, SetAggregate aggregate = SetAggregate::sum);
    Var forward(const Var& X, const Tensor& mask = {});
    std::string describe() const override { return "deep_sets_equivariant"; }

    Var Lambda, Gamma;  // d×d'

private:
    SetAggregate aggregate_;
};

// ---- 80. gru_gating ------------------------------------------------------------------------
// Cho+ (2014), Learning Phrase Representations using RNN Encoder–Decoder,
// EMNLP; Chung, Gulcehre, Cho, Bengio (2014), arXiv 1412.3555 (this convention).
//   z_t = σ(W_z x_t + U_z h_{t−1} + b_z)               update gate
//   r_t = σ(W_r x_t + U_r h_{t−1} + b_r)               reset gate
//   h̃_t = tanh(W x_t + U (r_t ⊙ h_{t−1}) + b)
//   h_t = (1 − z_t) ⊙ h_{t−1} + z_t ⊙ h̃_t
// W_* d_h×d_x ("W_z", "W_r", "W", Linear with the biases b_*), U_* d_h×d_h
// ("U_z", "U_r", "U", no bias). Cho et al. swap z and 1 − z.
// X B×T×d_x, h_0 B×d_h (undefined: zeros), mask B×T (a masked step keeps the
// state) → states B×T×d_h and both gates B×T×d_h.
struct GruGatingOutput {
    Var states;        // h_1 … h_T
    Var update_gates;  // z_1 … z_T
    Var reset_gates;   // r_1 … r_T
};

class GruGating : public AttentionModule {
public:
    GruGating(int64_t input_dim, int64_t hidden_dim, Generator& gen);

    // One step: x_t B×d_x, h_{t−1} B×d_h → h_t, z_t, r_t (each B×d_h).
    struct Step {
        Var h, z, r;
    };
    Step step(const Var& x, const Var& h);
    GruGatingOutput forward(const Var& X, const Var& h0 = {}, const Tensor& mask = {});

    std::string id() const override { return "gru_gating"; }
    Taxonomy taxonomy() const override;

    Linear W_z, W_r, W, U_z, U_r, U;

private:
    int64_t hidden_dim_;
};

}  // namespace attn
