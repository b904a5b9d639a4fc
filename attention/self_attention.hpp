// Self-attention: the queries, keys and values all come from one sequence X
// (catalog group QT, the "self" query type of the survey, §3.3.1).
//
//   37  qkv_self_attention     Q, K, V are learned projections of X (Vaswani et al. 2017)
//   38  plain_self_attention   no parameters: Q = K = V = X
//
// Shape legend (row = position, batch first):
//   X B×n×d → Q, K B×n×d_k, V B×n×d_v → output B×n×d_v (or B×n×d after the
//   feature update), weights B×n×n.
//   mask: a keep mask broadcastable to B×n×n (key_mask(B×n) → B×1×n for
//   padding, causal_mask(n, n)); `causal` adds the causal mask.
// Without a position encoding both are permutation equivariant: Y(PX) = P Y(X).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "attention/general.hpp"
#include "nn/layernorm.hpp"

namespace attn {

// ---- entry 37: qkv_self_attention ------------------------------------------------
// Vaswani et al. (2017); "intra-attention" in Cheng, Dong & Lapata (2016):
//
//     Q = X W_Qᵀ,  K = X W_Kᵀ,  V = X W_Vᵀ
//     Y = softmax_row(Q Kᵀ / √d_k + M) V                     (entry 44)
//     feature update: X' = Y, or X' = LayerNorm(X + Y W_Oᵀ)   (options.residual_norm)
//
// Params: W_Q, W_K d_k×d; W_V d_v×d; with residual_norm also W_O d×d_v and
// the LayerNorm's γ, β ("norm.weight", "norm.bias").
class QKVSelfAttention : public AttentionModule {
public:
    struct Options {
        bool residual_norm = false;
    };
    QKVSelfAttention(int64_t d, int64_t d_k, int64_t d_v, Generator& gen);
    QKVSelfAttention(int64_t d, int64_t d_k, int64_t d_v, Generator& gen, const Options& options);

    // X B×n×d → X' (B×n×d_v, or B×n×d with residual_norm), weights B×n×n.
    AttentionOutput forward(const Var& x, const Tensor& mask = {}, bool causal = false);

    std::string id() const override { return "qkv_self_attention"; }
    Taxonomy taxonomy() const override;

    Var W_Q, W_K;  // d_k×d
    Var W_V;       // d_v×d
    Var W_O;       // d×d_v; undefined without residual_norm
    std::unique_ptr<LayerNorm> norm;  // null without residual_norm

private:
    int64_t d_;
};

// ---- entry 38: plain_self_attention ----------------------------------------------
// The parameter-free case of Vaswani et al. (2017), W_Q = W_K = W_V = I:
//
//     Y = softmax_row(X Xᵀ / τ + M) X,      τ = √d (scaled) or 1
//
// X B×n×d → Y B×n×d, weights B×n×n.
AttentionOutput plain_self_attention(const Var& x, const Tensor& mask = {}, bool scaled = true, bool causal = false);

}  // namespace attn
