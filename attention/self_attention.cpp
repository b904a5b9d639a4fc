// Self-attention with learned projections (entry 37) and without (entry 38).
// Formulas and the shape legend are in attention/self_attention.hpp.
#include "attention/self_attention.hpp"

#include <cmath>
#include <stdexcept>

#include "attention/scaled_dot_product.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

Taxonomy self_taxonomy() {
    Taxonomy t;
    t.scoring = "scaled_dot_score";
    t.query = "self";
    return t;
}

}  // namespace

// ---- entry 37: qkv_self_attention --------------------------------------------------------

QKVSelfAttention::QKVSelfAttention(int64_t d, int64_t d_k, int64_t d_v, Generator& gen)
    : QKVSelfAttention(d, d_k, d_v, gen, Options{}) {}

QKVSelfAttention::QKVSelfAttention(int64_t d, int64_t d_k, int64_t d_v, Generator& gen, const Options& options)
    : d_(d) {
    if (d <= 0 || d_k <= 0 || d_v <= 0)
        throw std::invalid_argument(id() + ": needs d, d_k, d_v > 0, got " + std::to_string(d) + ", " +
                                    std::to_string(d_k) + ", " + std::to_string(d_v));
    W_Q = register_parameter("W_Q", init::xavier_uniform(Shape{d_k, d}, gen));
    W_K = register_parameter("W_K", init::xavier_uniform(Shape{d_k, d}, gen));
    W_V = register_parameter("W_V", init::xavier_uniform(Shape{d_v, d}, gen));
    if (options.residual_norm) {
        W_O = register_parameter("W_O", init::xavier_uniform(Shape{d, d_v}, gen));
        norm = std::make_unique<LayerNorm>(d);
        register_module("norm", *norm);
    }
}

AttentionOutput QKVSelfAttention::forward(const Var& x, const Tensor& mask, bool causal) {
    check_rank(id(), "x", x, 3);
    if (x.size(2) != d_)
        throw std::invalid_argument(id() + ": x " + x.shape().str() + " needs width d = " + std::to_string(d_));
    // Q = X W_Qᵀ, K = X W_Kᵀ, V = X W_Vᵀ                                B×n×d_k, B×n×d_k, B×n×d_v
    const Var Q = matmul(x, W_Q, false, true), K = matmul(x, W_K, false, true), V = matmul(x, W_V, false, true);
    // Y = softmax_row(Q Kᵀ / √d_k + M) V                                 B×n×d_v, weights B×n×n
    const AttentionOutput y = scaled_dot_product_attention(Q, K, V, mask, causal);
    if (!norm) return y;  // X' = Y
    // X' = LayerNorm(X + Y W_Oᵀ)                                         B×n×d
    return {(*norm)(x + matmul(y.output, W_O, false, true)), y.weights};
}

Taxonomy QKVSelfAttention::taxonomy() const { return self_taxonomy(); }

// ---- entry 38: plain_self_attention -------------------------------------------------------

AttentionOutput plain_self_attention(const Var& x, const Tensor& mask, bool scaled, bool causal) {
    check_rank("plain_self_attention", "x", x, 3);
    const int64_t n = x.size(1), d = x.size(2);
    const real inv_tau = scaled ? real(1) / std::sqrt(static_cast<real>(d)) : real(1);
    const Tensor M = combine_masks(mask, causal ? causal_mask(n, n) : Tensor());
    // X as the keys and values with the padded rows zeroed (by selection), as
    // the queries with the rows that may attend nothing zeroed (attention/padding.hpp)
    const Var keys = hide_unseen_keys(x, M), queries = hide_fully_masked_queries(x, M);
    // E = X Xᵀ / τ                                                       B×n×n
    const Var scores = matmul(queries, keys, false, true) * inv_tau;
    // A = softmax_row(E + M)                                             B×n×n
    const Var weights = softmax(scores, -1, M.defined() ? SoftmaxMask::keep(M) : SoftmaxMask{});
    // Y = A X                                                            B×n×d
    return {matmul(weights, keys), weights};
}

}  // namespace attn
