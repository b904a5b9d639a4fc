// Multi-dimensional attention (entry 30): a weight per key and per feature.
// The formulas, the papers and the shape legend are in attention/multi_dimensional.hpp.
#include "attention/multi_dimensional.hpp"

#include <stdexcept>

#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

MultiDimensionalAttention::MultiDimensionalAttention(int64_t query_dim, int64_t key_dim, int64_t hidden_dim,
                                                     int64_t value_dim, Generator& gen, Activation act)
    : act_(act) {
    W_1 = register_parameter("W_1", init::xavier_uniform(Shape{hidden_dim, query_dim}, gen));
    W_2 = register_parameter("W_2", init::xavier_uniform(Shape{hidden_dim, key_dim}, gen));
    b = register_parameter("b", init::uniform_fan_in(Shape{hidden_dim}, query_dim, gen));
    W_d = register_parameter("W_d", init::xavier_uniform(Shape{hidden_dim, value_dim}, gen));
}

AttentionOutput MultiDimensionalAttention::forward(const Var& queries_in, const Var& keys_in, const Var& values_in,
                                                   const Tensor& mask) {
    check_qkv(id(), queries_in, keys_in, values_in);
    if (queries_in.size(2) != W_1.size(1) || keys_in.size(2) != W_2.size(1) || values_in.size(2) != W_d.size(1))
        throw std::invalid_argument(id() + ": queries " + queries_in.shape().str() + ", keys " +
                                    keys_in.shape().str() + " and values " + values_in.shape().str() +
                                    " need widths d_q = " + std::to_string(W_1.size(1)) + ", d_k = " +
                                    std::to_string(W_2.size(1)) + ", d_v = " + std::to_string(W_d.size(1)));
    // keys no query may attend, and queries that may attend none, zeroed (by
    // selection) before the products read them (attention/padding.hpp)
    const auto [queries, keys, values] = visible(queries_in, keys_in, values_in, mask);
    const Var Wq = matmul(queries, W_1, false, true);          // W_1 q    B×m×d_w
    const Var Wk = matmul(keys, W_2, false, true);             // W_2 k_l  B×n×d_w
    const Var H = additive_features(Wq, Wk, b, act_);          // act(W_1 q + W_2 k_l + b)   B×m×n×d_w
    const Var E = matmul(H, W_d);                              // e_l = W_dᵀ act(…)          B×m×n×d_v

    // a_{l,i} = exp(e_{l,i}) / Σ_j exp(e_{j,i}): softmax over the keys (axis 2),
    // the B×m×n keep mask broadcast over the features.
    const Var A = mask.defined() ? softmax(E, 2, SoftmaxMask::keep(unsqueeze(mask, mask.rank()))) : softmax(E, 2);
    const Var c = sum(A * unsqueeze(values, 1), 2);  // c = Σ_l a_l ∘ v_l   B×m×n×d_v → B×m×d_v
    return {c, A};
}

Taxonomy MultiDimensionalAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive_score";
    t.alignment = "soft";
    t.dimensionality = "multi";
    return t;
}

std::string MultiDimensionalAttention::describe() const {
    return "multi_dimensional_attention(d_q=" + std::to_string(W_1.size(1)) + ", d_k=" + std::to_string(W_2.size(1)) +
           ", d_w=" + std::to_string(W_1.size(0)) + ", d_v=" + std::to_string(W_d.size(1)) +
           ", act=" + activation_name(act_) + ")";
}

}  // namespace attn
