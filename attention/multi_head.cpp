// Multi-head attention (entry 40), narrow and wide heads (41) and gated heads
// (49). Formulas and the shape legend are in attention/multi_head.hpp.
#include "attention/multi_head.hpp"

#include <cmath>
#include <stdexcept>

#include "attention/fused_attention.hpp"
#include "attention/scaled_dot_product.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

Taxonomy multi_head_taxonomy() {
    Taxonomy t;
    t.scoring = "scaled_dot_score";
    t.query_multiplicity = "multi-head";
    return t;
}

}  // namespace

// ---- entry 40: multi_head_attention ----------------------------------------------------

MultiHeadAttention::MultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen)
    : MultiHeadAttention(d_model, heads, gen, Options{}) {}

MultiHeadAttention::MultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen, const Options& options)
    : d_model_(d_model), h_(heads), options_(options) {
    if (d_model <= 0 || heads <= 0 || ((options.d_k == 0 || options.d_v == 0) && d_model % heads != 0))
        throw std::invalid_argument(id() + ": d_model = " + std::to_string(d_model) + " and h = " +
                                    std::to_string(heads) + ": need h > 0 dividing d_model (or explicit d_k, d_v)");
    d_k_ = options.d_k > 0 ? options.d_k : d_model / heads;
    d_v_ = options.d_v > 0 ? options.d_v : d_model / heads;
    W_Q = register_parameter("W_Q", init::xavier_uniform(Shape{d_model, h_ * d_k_}, gen));
    W_K = register_parameter("W_K", init::xavier_uniform(Shape{d_model, h_ * d_k_}, gen));
    W_V = register_parameter("W_V", init::xavier_uniform(Shape{d_model, h_ * d_v_}, gen));
    W_O = register_parameter("W_O", init::xavier_uniform(Shape{h_ * d_v_, d_model}, gen));
    if (options.bias) {
        b_Q = register_parameter("b_Q", Tensor::zeros(Shape{h_ * d_k_}));
        b_K = register_parameter("b_K", Tensor::zeros(Shape{h_ * d_k_}));
        b_V = register_parameter("b_V", Tensor::zeros(Shape{h_ * d_v_}));
        b_O = register_parameter("b_O", Tensor::zeros(Shape{d_model}));
    }
}

Var MultiHeadAttention::project(const Var& x, const Var& W, const Var& b) const {
    // X W + b, every head at once: one matmul                          B×m×(h·w)
    // (the fast paths add b to the product in place: matmul_bias)
    if (!b.defined()) return matmul(x, W);
    if (options_.fused) return matmul_bias(x, W, b);
    return matmul(x, W) + b;
}

Var MultiHeadAttention::project_to_heads(const Var& x, const Var& W, const Var& b) const {
    // X W + b → B×m×h×w → B×h×m×w
    return split_heads(project(x, W, b), h_);
}

VisibleInputs MultiHeadAttention::prepare(const Var& queries, const Var& keys, const Var& values,
                                                       const Tensor& mask, bool causal) const {
    check_qkv(id(), queries, keys, values);
    if (queries.size(2) != d_model_ || keys.size(2) != d_model_ || values.size(2) != d_model_)
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + ", keys " + keys.shape().str() +
                                    " and values " + values.shape().str() + " need width d_model = " +
                                    std::to_string(d_model_));
    // The rows of keys no query may attend (padding), and of queries that may
    // attend no key, are zeroed before W_K, W_V, W_Q read them: a NaN there
    // would otherwise reach their gradients (X_jᵀ·0 = NaN) and through them
    // every sequence of the batch (attention/padding.hpp).
    return visible_to_heads(queries, keys, values, mask, causal);
}

AttentionOutput MultiHeadAttention::heads(const Var& queries, const Var& keys, const Var& values, const Tensor& mask,
                                          bool causal) const {
    if (options_.fused) return heads_fast(queries, keys, values, mask, causal);
    const VisibleInputs x = prepare(queries, keys, values, mask, causal);
    // Q W^Q_j, K W^K_j, V W^V_j for every head j                        B×h×m×d_k, B×h×n×d_k, B×h×n×d_v
    const Var Q = project_to_heads(x.queries, W_Q, b_Q);
    const Var K = project_to_heads(x.keys, W_K, b_K);
    const Var V = project_to_heads(x.values, W_V, b_V);
    // head_j = Attn(Q W^Q_j, K W^K_j, V W^V_j)                          B×h×m×d_v, weights B×h×m×n
    const Tensor M = mask_for_heads(mask);  // a B×m×n mask as B×1×m×n: the same for every head
    return scaled_dot_product_attention(Q, K, V, M, causal);
}

// The fast twin of heads(): the same projections, and the fused kernel for
// each head's attention (attention/fused_attention.hpp).
AttentionOutput MultiHeadAttention::heads_fast(const Var& queries, const Var& keys, const Var& values,
                                               const Tensor& mask, bool causal) const {
    const VisibleInputs x = prepare(queries, keys, values, mask, causal);
    const FusedAttentionOptions fused{.causal = causal, .need_weights = options_.need_weights};
    return scaled_dot_product_attention_fused(project_to_heads(x.queries, W_Q, b_Q),
                                              project_to_heads(x.keys, W_K, b_K),
                                              project_to_heads(x.values, W_V, b_V), mask_for_heads(mask), fused);
}

Var MultiHeadAttention::output_projection(const Var& concatenated) const {
    // [head_1, …, head_h] W^O (+ b_O)                                   B×m×d_model
    if (options_.fused && b_O.defined()) return matmul_bias(concatenated, W_O, b_O);  // the fast twin
    Var y = matmul(concatenated, W_O);
    if (b_O.defined()) y = y + b_O;
    return y;
}

Var MultiHeadAttention::merge_heads(const Var& heads) const { return output_projection(concat_heads(heads)); }

AttentionOutput MultiHeadAttention::forward(const Var& queries, const Var& keys, const Var& values,
                                            const Tensor& mask, bool causal) {
    if (!options_.fused) {  // the composite: split into heads, attend, concatenate (heads, merge_heads)
        const AttentionOutput h = heads(queries, keys, values, mask, causal);
        return {merge_heads(h.output), h.weights};
    }
    // The fast twin: the same steps, but the kernel reads every head in place
    // from the projections B×m×(h·d_k) and writes the heads concatenated,
    // B×m×(h·d_v) (scaled_dot_product_attention_fused_heads): no split, no
    // concatenation, four copies fewer each way.
    const VisibleInputs x = prepare(queries, keys, values, mask, causal);
    FusedAttentionOptions fused;
    fused.causal = causal;
    fused.need_weights = options_.need_weights;
    const AttentionOutput a = scaled_dot_product_attention_fused_heads(
        project(x.queries, W_Q, b_Q), project(x.keys, W_K, b_K), project(x.values, W_V, b_V), h_,
        mask_for_heads(mask), fused);
    return {output_projection(a.output), a.weights};
}

Taxonomy MultiHeadAttention::taxonomy() const { return multi_head_taxonomy(); }

// ---- entry 41: narrow_wide_multi_head_attention ------------------------------------------

NarrowWideMultiHeadAttention::NarrowWideMultiHeadAttention(int64_t d, int64_t heads, Kind kind, Generator& gen)
    : d_(d), h_(heads), c_(0), kind_(kind) {
    if (d <= 0 || heads <= 0 || (kind == Kind::narrow && d % heads != 0))
        throw std::invalid_argument(id() + ": d = " + std::to_string(d) + " and h = " + std::to_string(heads) +
                                    ": need h > 0 (and, for narrow heads, h dividing d)");
    c_ = kind == Kind::narrow ? d / heads : d;
    // Each head's c×c matrix ~ U(−b, b), b = √(6 / (c + c)) (Xavier per head).
    const real bound = std::sqrt(real(3) / static_cast<real>(c_));
    W_Q = register_parameter("W_Q", Tensor::uniform(Shape{h_, c_, c_}, -bound, bound, gen));
    W_K = register_parameter("W_K", Tensor::uniform(Shape{h_, c_, c_}, -bound, bound, gen));
    W_V = register_parameter("W_V", Tensor::uniform(Shape{h_, c_, c_}, -bound, bound, gen));
    W_O = register_parameter("W_O", init::xavier_uniform(Shape{h_ * c_, d}, gen));
}

AttentionOutput NarrowWideMultiHeadAttention::heads(const Var& x, const Tensor& mask, bool causal) const {
    check_rank(id(), "x", x, 3);
    if (x.size(2) != d_)
        throw std::invalid_argument(id() + ": x " + x.shape().str() + " needs width d = " + std::to_string(d_));
    // X_j: narrow, column chunk j of X (B×n×d → B×n×h×c → B×h×n×c);
    //      wide, all of X for every head (B×1×n×d)
    auto split = [&](const Var& rows) {
        return kind_ == Kind::narrow ? split_heads(rows, h_) : unsqueeze(rows, 1);
    };
    // X's padded rows zeroed, as keys and values, and as queries when fully masked (as in entry 40)
    const VisibleInputs v = visible_to_heads(x, x, x, mask, causal);
    const Var X = split(v.queries), X_kv = split(v.keys);
    // X_j W^Q_j, X_j W^K_j, X_j W^V_j, batched over the heads            B×h×n×c
    const Var Q = matmul(X, W_Q), K = matmul(X_kv, W_K), V = matmul(X_kv, W_V);
    // head_j = Attn(Q_j, K_j, V_j)                                       B×h×n×c, weights B×h×n×n
    return scaled_dot_product_attention(Q, K, V, mask_for_heads(mask), causal);
}

AttentionOutput NarrowWideMultiHeadAttention::forward(const Var& x, const Tensor& mask, bool causal) {
    const AttentionOutput h = heads(x, mask, causal);
    // Y = [head_1, …, head_h] W^O                                       B×n×d
    return {matmul(concat_heads(h.output), W_O), h.weights};
}

Taxonomy NarrowWideMultiHeadAttention::taxonomy() const {
    Taxonomy t = multi_head_taxonomy();
    t.query = "self";
    return t;
}

// ---- entry 49: head_gated_multi_head_attention ----------------------------------------------

HeadGatedMultiHeadAttention::HeadGatedMultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen)
    : HeadGatedMultiHeadAttention(d_model, heads, gen, MultiHeadAttention::Options{}) {}

HeadGatedMultiHeadAttention::HeadGatedMultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen,
                                                         const MultiHeadAttention::Options& options)
    : mha(d_model, heads, gen, options), gen_(&gen) {
    register_module("mha", mha);
    // log α = 0: P(g ≠ 0) = 0.83 at the start (Louizos et al.'s initial drop rate 0.5).
    log_alpha = register_parameter("log_alpha", Tensor::zeros(Shape{heads}));
}

Var HeadGatedMultiHeadAttention::gates(const Tensor& u) const {
    if (u.shape() != log_alpha.shape())
        throw std::invalid_argument(id() + ": gate noise u " + u.shape().str() + " needs one value per head, " +
                                    log_alpha.shape().str());
    // s = σ((log u − log(1 − u) + log α) / β)                            h
    const Var s = sigmoid((Var(log(u) - log(-u + real(1))) + log_alpha) * (1 / beta));
    // g = min(1, max(0, s (ζ − γ) + γ))                                  h
    return clamp(s * (zeta - gamma) + gamma, 0, 1);
}

Var HeadGatedMultiHeadAttention::sample_gates(Generator& gen) const {
    // u ~ U(0, 1), kept a hair away from 0 and 1 so that log u stays finite.
    return gates(Tensor::uniform(log_alpha.shape(), real(1e-6), real(1 - 1e-6), gen));
}

Var HeadGatedMultiHeadAttention::test_gates() const {
    // g = min(1, max(0, σ(log α)(ζ − γ) + γ))
    return clamp(sigmoid(log_alpha) * (zeta - gamma) + gamma, 0, 1);
}

Var HeadGatedMultiHeadAttention::l0_penalty() const {
    // L_C = Σ_j σ(log α_j − β log(−γ/ζ))
    return sum(sigmoid(log_alpha - beta * std::log(-gamma / zeta)));
}

AttentionOutput HeadGatedMultiHeadAttention::forward_with_gates(const Var& queries, const Var& keys,
                                                                const Var& values, const Var& g, const Tensor& mask,
                                                                bool causal) {
    const int64_t h = mha.num_heads();
    if (!g.defined() || g.shape() != Shape{h})
        throw std::invalid_argument(id() + ": gates " + (g.defined() ? g.shape().str() : std::string("undefined")) +
                                    " need one value per head, " + Shape{h}.str());
    const AttentionOutput heads = mha.heads(queries, keys, values, mask, causal);  // B×h×m×d_v
    // [g_1 head_1, …, g_h head_h] W^O                                   B×m×d_model
    const Var gated = heads.output * reshape(g, {1, h, 1, 1});
    return {mha.merge_heads(gated), heads.weights};
}

AttentionOutput HeadGatedMultiHeadAttention::forward(const Var& queries, const Var& keys, const Var& values,
                                                     const Tensor& mask, bool causal) {
    const Var g = is_training() ? sample_gates(*gen_) : test_gates();
    return forward_with_gates(queries, keys, values, g, mask, causal);
}

Taxonomy HeadGatedMultiHeadAttention::taxonomy() const { return multi_head_taxonomy(); }

}  // namespace attn
