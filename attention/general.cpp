// The general attention module (entry 1), the taxonomy tags and the shape checks every mechanism shares.
// The formulas, the papers and the shape legend are in attention/general.hpp.
#include "attention/general.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

std::string Taxonomy::str() const {
    return "multiplicity=" + multiplicity + " levels=" + levels + " representations=" + representations +
           " scoring=" + scoring + " alignment=" + alignment + " dimensionality=" + dimensionality +
           " query=" + query + " query_multiplicity=" + query_multiplicity;
}

bool singular_features_attention(const Taxonomy& t) { return t.multiplicity == "singular"; }
bool single_level_attention(const Taxonomy& t) { return t.levels == "single"; }
bool single_representational_attention(const Taxonomy& t) { return t.representations == "single"; }
bool single_dimensional_attention(const Taxonomy& t) { return t.dimensionality == "single"; }
bool singular_query_attention(const Taxonomy& t) { return t.query_multiplicity == "singular"; }

// ---- masks -------------------------------------------------------------------

Tensor length_mask(const std::vector<int64_t>& lengths, int64_t n) {
    const int64_t B = static_cast<int64_t>(lengths.size());
    Tensor mask = Tensor::zeros(Shape{B, n});
    for (int64_t b = 0; b < B; ++b) {
        const int64_t len = lengths[static_cast<size_t>(b)];
        if (len < 0 || len > n)
            throw std::invalid_argument("length_mask: length " + std::to_string(len) + " of sequence " +
                                        std::to_string(b) + " is outside [0, " + std::to_string(n) + "]");
        for (int64_t j = 0; j < len; ++j) mask[b * n + j] = 1;
    }
    return mask;
}

Tensor key_mask(const Tensor& mask_b_n) {
    if (mask_b_n.rank() != 2)
        throw std::invalid_argument("key_mask: expected a B×n mask, got " + mask_b_n.shape().str());
    return mask_b_n.reshape(Shape{mask_b_n.size(0), 1, mask_b_n.size(1)});
}

Tensor causal_mask(int64_t m, int64_t n) {
    Tensor mask = Tensor::zeros(Shape{m, n});
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n && j <= i + (n - m); ++j) mask[i * n + j] = 1;
    return mask;
}

Tensor band_mask(int64_t n, int64_t r) {
    Tensor mask = Tensor::zeros(Shape{n, n});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) mask[i * n + j] = (i - j <= r && j - i <= r) ? 1 : 0;
    return mask;
}

Tensor combine_masks(const Tensor& a, const Tensor& b) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    return mul(a, b);
}

// ---- shared pieces -------------------------------------------------------------

Var attend(const Var& weights, const Var& values) { return matmul(weights, values); }

void check_rank(const std::string& who, const char* what, const Var& v, int rank) {
    if (!v.defined()) throw std::invalid_argument(who + ": " + what + " is undefined");
    if (v.rank() != rank)
        throw std::invalid_argument(who + ": " + what + " " + v.shape().str() + " must have rank " +
                                    std::to_string(rank));
}

void check_width(const std::string& who, const char* what, const Var& x, int64_t width, int rank) {
    if (rank > 0) check_rank(who, what, x, rank);
    if (!x.defined()) throw std::invalid_argument(who + ": " + what + " is undefined");
    if (x.size(-1) != width)
        throw std::invalid_argument(who + ": " + what + " " + x.shape().str() + " need width " +
                                    std::to_string(width));
}

void check_qkv(const std::string& who, const Var& queries, const Var& keys, const Var& values) {
    check_rank(who, "queries", queries, 3);
    check_rank(who, "keys", keys, 3);
    check_rank(who, "values", values, 3);
    if (queries.size(0) != keys.size(0) || keys.size(0) != values.size(0))
        throw std::invalid_argument(who + ": queries " + queries.shape().str() + ", keys " + keys.shape().str() +
                                    " and values " + values.shape().str() + " need the same batch size");
    if (keys.size(1) != values.size(1))
        throw std::invalid_argument(who + ": keys " + keys.shape().str() + " and values " + values.shape().str() +
                                    " need the same number of positions");
}

// ---- entry 1: general_attention -------------------------------------------------

GeneralAttention::GeneralAttention(std::unique_ptr<ScoreFunction> score, std::unique_ptr<Alignment> align)
    : score_(std::move(score)), align_(std::move(align)) {
    if (!score_ || !align_) throw std::invalid_argument("general_attention: needs a score and an alignment");
    register_module("score", *score_);
    register_module("align", *align_);
}

GeneralAttention::GeneralAttention(std::unique_ptr<ScoreFunction> score, std::unique_ptr<Alignment> align,
                                   const Options& options, Generator& gen)
    : GeneralAttention(std::move(score), std::move(align)) {
    query_is_self_ = options.query_is_self;
    if ((options.key_dim > 0 || options.value_dim > 0) && options.feature_dim <= 0)
        throw std::invalid_argument("general_attention: projecting keys or values needs feature_dim > 0");
    if (options.key_dim > 0)
        W_K = register_parameter("W_K", init::xavier_uniform(Shape{options.key_dim, options.feature_dim}, gen));
    if (options.value_dim > 0)
        W_V = register_parameter("W_V", init::xavier_uniform(Shape{options.value_dim, options.feature_dim}, gen));
}

AttentionOutput GeneralAttention::forward(const Var& queries, const Var& features, const Tensor& mask) {
    check_rank(id(), "features", features, 3);
    // Padded feature rows are zeroed before the projections read them, so that
    // a NaN there reaches neither K, V nor the gradients of W_K, W_V.
    const Var visible = hide_unseen_keys(features, mask);
    // K = F W_Kᵀ, V = F W_Vᵀ: B×n×d_f · (d×d_f)ᵀ → B×n×d
    const Var keys = W_K.defined() ? matmul(visible, W_K, false, true) : visible;
    const Var values = W_V.defined() ? matmul(visible, W_V, false, true) : visible;
    return forward(queries, keys, values, mask);
}

AttentionOutput GeneralAttention::forward(const Var& queries_in, const Var& keys_in, const Var& values_in,
                                          const Tensor& mask) {
    check_qkv(id(), queries_in, keys_in, values_in);
    // What the formula may read: keys no query may attend, and queries that
    // may attend no key, zeroed when they hold NaN or inf (attention/padding.hpp)
    const auto [queries, keys, values] = visible(queries_in, keys_in, values_in, mask);
    const Var scores = score_->score(queries, keys);                        // e = score(q, K)   B×m×n
    const Var weights = align_->align({scores, mask, queries, Tensor()});  // a = align(e)      B×m×n
    return {attend(weights, values), weights};                             // c = A V           B×m×d_v
}

Taxonomy GeneralAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = score_->id();
    t.alignment = align_->tag();
    if (query_is_self_) t.query = "self";
    return t;
}

Var as_row(const Var& v) { return reshape(v, {1, v.size(0)}); }

Var l2_norm(const Var& x, int axis) { return sqrt(sum(square(x), axis, /*keepdim=*/true) + real(1e-30)); }

}  // namespace attn
