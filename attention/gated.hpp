// Gated attention (entry 85, added after the catalog's 80 as docs/extending.md's
// worked example of a whole new mechanism): scaled dot-product attention whose
// output is multiplied, feature by feature, by a sigmoid gate computed from
// the query. Qiu et al. (2025), Gated Attention for Large Language Models:
// Non-linearity, Sparsity, and Attention-Sink-Free, eq. 5 (one head):
//
//     o_i = softmax_l(q_i · k_l / √d_k) V           what entry 44 computes
//     g_i = σ(W_g q_i + b_g)                        one gate per feature, in (0, 1)
//     y_i = g_i ∘ o_i
//
// Shapes: queries B×m×d_k, keys B×n×d_k, values B×n×d_v, mask broadcastable
// to B×m×n; output B×m×d_v, weights B×m×n. The gate lets a query scale down
// what it read, down to nothing: the paper's cure for the "attention sink".
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"

namespace attn {

class GatedAttention : public AttentionModule {
public:
    GatedAttention(int64_t query_dim, int64_t value_dim, Generator& gen);
    AttentionOutput forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {});
    std::string id() const override { return "gated_attention"; }
    Taxonomy taxonomy() const override;

    Var W_g, b_g;  // the gate: d_v×d_k and d_v
};

}  // namespace attn
