// Catalog entry 30, `multi_dimensional_attention` (survey §3.2.3): one weight
// per key AND per feature, instead of one scalar weight per key.
//
// Shen, Zhou, Long, Jiang, Pan, Zhang (2018), DiSAN: Directional Self-Attention
// Network for RNN/CNN-Free Language Understanding, AAAI.
//
//     e_l = W_dᵀ act(W_1 q + W_2 k_l + b)             a score vector in ℝ^{d_v} per key
//     a_{l,i} = exp(e_{l,i}) / Σ_j exp(e_{j,i})       column-softmax: over keys, per feature i
//     c = Σ_l a_l ∘ v_l                               c_i mixes feature i of the values by its own weights
//
// Shapes (row = position, batch first):
//     queries B×m×d_q   keys B×n×d_k   values B×n×d_v   keep mask broadcastable to B×m×n
//     → output B×m×d_v, weights B×m×n×d_v (every (query, feature) column sums to 1 over n)
// Params: W_1 d_w×d_q, W_2 d_w×d_k, b d_w, W_d d_w×d_v; act = tanh.
// With every column of W_d equal to one w, each column of A is the additive
// score (entry 15) under soft alignment (entry 22). DiSAN's directional masks
// are keep masks (causal_mask and its transpose); its output bias is left out.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"
#include "attention/scores.hpp"

namespace attn {

class MultiDimensionalAttention : public AttentionModule {
public:
    MultiDimensionalAttention(int64_t query_dim, int64_t key_dim, int64_t hidden_dim, int64_t value_dim,
                              Generator& gen, Activation act = Activation::tanh);

    // queries B×m×d_q, keys B×n×d_k, values B×n×d_v, mask → output B×m×d_v, weights B×m×n×d_v
    AttentionOutput forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {});

    std::string id() const override { return "multi_dimensional_attention"; }
    Taxonomy taxonomy() const override;
    std::string describe() const override;

    Var W_1, W_2, b, W_d;

private:
    Activation act_;
};

}  // namespace attn
