// Gated attention (entry 85): attention/gated.hpp has the formula and the paper.
#include "attention/gated.hpp"

#include <stdexcept>

#include "attention/scaled_dot_product.hpp"
#include "nn/init.hpp"

namespace attn {

GatedAttention::GatedAttention(int64_t query_dim, int64_t value_dim, Generator& gen) {
    W_g = register_parameter("W_g", init::xavier_uniform({value_dim, query_dim}, gen));
    b_g = register_parameter("b_g", Tensor::zeros(Shape{value_dim}));
}

AttentionOutput GatedAttention::forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask) {
    check_qkv(id(), queries, keys, values);
    if (queries.size(2) != W_g.size(1) || values.size(2) != W_g.size(0))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and values " +
                                    values.shape().str() + " need widths d_k = " + std::to_string(W_g.size(1)) +
                                    " and d_v = " + std::to_string(W_g.size(0)));
    // o = softmax(q·k / √d_k) V, masks and padded keys handled as entry 44 does   B×m×d_v
    const AttentionOutput attended = scaled_dot_product_attention(queries, keys, values, mask);
    // g = σ(W_g q + b_g)                                                          B×m×d_v
    const Var gate = sigmoid(matmul(queries, W_g, false, true) + b_g);
    // y = g ∘ o
    return {gate * attended.output, attended.weights};
}

Taxonomy GatedAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "scaled_dot_score";
    return t;
}

}  // namespace attn
