// The multiplicity of queries (entries 39, 42, 43): one query, many hops, capsules.
// The formulas, the papers and the shape legend are in attention/multi_query.hpp.
#include "attention/multi_query.hpp"

#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

// ---- 42. multi_hop_attention ---------------------------------------------------------------

MultiHopAttention::MultiHopAttention(int64_t query_dim, int64_t value_dim, const ScoreFactory& make_score,
                                     const Options& options, Generator& gen)
    : options_(options) {
    const std::string who = "multi_hop_attention";
    if (options.hops < 1) throw std::invalid_argument(who + ": needs at least one hop, got " +
                                                      std::to_string(options.hops));
    if (options.transform == Transform::residual && query_dim != value_dim)
        throw std::invalid_argument(who + ": the residual transform q + c needs d_q = d_v, got " +
                                    std::to_string(query_dim) + " and " + std::to_string(value_dim));
    if (!make_score) throw std::invalid_argument(who + ": needs a score factory");
    const int64_t copies = options.shared ? 1 : options.hops;
    for (int64_t s = 0; s < copies; ++s) {
        const std::string suffix = options.shared ? "" : "_" + std::to_string(s);
        scores_.push_back(make_score(gen));
        if (!scores_.back()) throw std::invalid_argument(who + ": the score factory returned nothing");
        register_module("score" + suffix, *scores_.back());
        if (options.transform == Transform::concat_linear)
            W_t.push_back(
                register_parameter("W_t" + suffix, init::xavier_uniform(Shape{query_dim, query_dim + value_dim}, gen)));
    }
}

ScoreFunction& MultiHopAttention::score(int64_t hop) {
    if (hop < 0 || hop >= options_.hops)
        throw std::out_of_range("multi_hop_attention: hop " + std::to_string(hop) + " is outside [0, " +
                                std::to_string(options_.hops) + ")");
    return *scores_[static_cast<size_t>(options_.shared ? 0 : hop)];
}

Var MultiHopAttention::transform(int64_t hop, const Var& q, const Var& c) {
    switch (options_.transform) {
        case Transform::residual: return add(q, c);  // q + c
        case Transform::concat_linear:               // W_t [q; c]
            return matmul(concat({q, c}, -1), W_t[static_cast<size_t>(options_.shared ? 0 : hop)], false, true);
        case Transform::identity: return q;
    }
    throw std::invalid_argument("multi_hop_attention: unknown transform");
}

MultiHopAttention::Output MultiHopAttention::forward(const Var& queries, const Var& keys_in, const Var& values_in,
                                                     const Tensor& mask) {
    check_qkv(id(), queries, keys_in, values_in);
    const int64_t B = queries.size(0), m = queries.size(1), d_v = values_in.size(2);
    const Tensor keep = scores_keep_mask(id(), mask, keys_in.size(0), keys_in.size(1));
    // Padded keys and values are zeroed (by selection) before any hop reads
    // them: a NaN there must not reach the output or a gradient.
    const Var keys = hide_unseen_keys(keys_in, keep), values = hide_unseen_keys(values_in, keep);
    // c⁽⁰⁾ = (1/n) Σ_l v_l, one per query                     B×m×d_v
    Var c = expand(masked_mean(values, mask), Shape{B, m, d_v});
    Var q = queries;
    std::vector<Var> weights;
    for (int64_t s = 0; s < options_.hops; ++s) {
        // q⁽ˢ⁺¹⁾ = transform(q⁽ˢ⁾, c⁽ˢ⁾)                      B×m×d_q
        q = transform(s, q, c);
        // e⁽ˢ⁾ = score([q⁽ˢ⁺¹⁾; c⁽ˢ⁾], K)                      B×m×n
        const Var e = score(s).score(concat({q, c}, -1), keys);
        // c⁽ˢ⁺¹⁾ = Σ_l softmax(e⁽ˢ⁾)_l v_l                      B×m×d_v
        const Var a = masked_softmax(e, keep);
        c = attend(a, values);
        weights.push_back(a);
    }
    return {c, stack(weights, 1), q};  // weights B×S×m×n
}

Taxonomy MultiHopAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = scores_.front()->id();
    t.query_multiplicity = "multi-hop";
    return t;
}

// ---- 43. capsule_attention -------------------------------------------------------------------

CapsuleAttention::CapsuleAttention(int64_t num_classes, int64_t key_dim, int64_t value_dim, Generator& gen) {
    q = register_parameter("q", init::uniform_fan_in(Shape{num_classes, key_dim}, key_dim, gen));
    w = register_parameter("w", init::uniform_fan_in(Shape{num_classes, value_dim}, value_dim, gen));
    Tensor biases = Tensor::zeros(Shape{num_classes});
    b = register_parameter("b", biases);
}

CapsuleAttention::Output CapsuleAttention::forward(const Var& keys_in, const Var& values_in, const Tensor& mask) {
    check_rank(id(), "keys", keys_in, 3);
    check_rank(id(), "values", values_in, 3);
    const Tensor keep = scores_keep_mask(id(), mask, keys_in.size(0), keys_in.size(1));
    // Padded positions are zeroed (by selection) before the products read them.
    const Var keys = hide_unseen_keys(keys_in, keep), values = hide_unseen_keys(values_in, keep);
    if (keys.size(0) != values.size(0) || keys.size(1) != values.size(1) || keys.size(2) != q.size(1) ||
        values.size(2) != w.size(1))
        throw std::invalid_argument(id() + ": keys " + keys.shape().str() + " and values " + values.shape().str() +
                                    " need shapes B×n×" + std::to_string(q.size(1)) + " and B×n×" +
                                    std::to_string(w.size(1)));
    // e_{c,l} = q_cᵀ k_l                 C×d_k · (B×n×d_k)ᵀ → B×C×n
    const Var e = matmul(q, keys, false, true);
    // a_c = softmax(e_c)                 B×C×n
    const Var a = masked_softmax(e, keep);
    // v_c = Σ_l a_{c,l} v_l               B×C×d_v
    const Var v = attend(a, values);
    // p_c = σ(w_cᵀ v_c + b_c)             B×C
    const Var p = sigmoid(add(sum(mul(v, w), -1), b));
    // r_c = p_c v_c                       B×C×d_v
    const Var r = mul(unsqueeze(p, -1), v);
    return {p, r, a};
}

Taxonomy CapsuleAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "dot_score";
    t.query = "self";
    t.query_multiplicity = "capsule";
    return t;
}

Var capsule_hinge(const Var& z, const Tensor& targets) {
    check_rank("capsule_hinge", "scores", z, 2);
    const int64_t B = z.size(0), C = z.size(1);
    if (targets.shape() != Shape{B})
        throw std::invalid_argument("capsule_hinge: targets " + targets.shape().str() + " need shape " +
                                    Shape{B}.str() + " for scores " + z.shape().str());
    const Tensor is_target = one_hot(targets, C);  // B×C
    // z_y                                  B×1
    const Var z_y = sum(mul(z, Var(is_target)), -1, /*keepdim=*/true);
    // max(0, 1 − z_y + z_c) for c ≠ y      B×C
    const Var margins = mul(relu(add(sub(z, z_y), real(1))), Var(sub(Tensor::ones(Shape{B, C}), is_target)));
    // (1/C) Σ_{c≠y}, averaged over the batch
    return mean(sum(margins, -1)) / static_cast<real>(C);
}

Var capsule_loss(const CapsuleAttention::Output& capsules, const Var& features, const Tensor& targets,
                 const Tensor& mask) {
    check_rank("capsule_loss", "features", features, 3);
    const Var& r = capsules.representations;  // B×C×d_v
    if (features.size(0) != r.size(0) || features.size(2) != r.size(2))
        throw std::invalid_argument("capsule_loss: features " + features.shape().str() +
                                    " and the capsules' reconstructions " + r.shape().str() +
                                    " need the same batch size and width (d_f = d_v)");
    // f̄ = the mean of the feature vectors   B×1×d_f
    const Var f_mean = masked_mean(features, mask);
    // s_c = r_cᵀ f̄                           B×C
    const Var s = squeeze(matmul(r, f_mean, false, true), -1);
    return add(capsule_hinge(capsules.probabilities, targets), capsule_hinge(s, targets));
}

}  // namespace attn
