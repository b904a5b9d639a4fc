// Nadaraya–Watson kernel regression (entries 51, 52): attention's oldest form.
// The formulas, the papers and the shape legend are in attention/kernel_regression.hpp.
#include "attention/kernel_regression.hpp"

#include <stdexcept>

#include "attention/query_types.hpp"

namespace attn {

namespace {

void check_points(const std::string& who, const Var& queries, const Var& keys, const Var& values) {
    check_qkv(who, queries, keys, values);
    if (queries.size(2) != keys.size(2))
        throw std::invalid_argument(who + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same number of coordinates");
}

// Σ_i softmax_i(e_i) y_i: the pooling shared by entries 51 and 52.
AttentionOutput pool(const std::string& who, const Var& scores, const Var& values, const Tensor& mask) {
    const Tensor keep = scores_keep_mask(who, mask, values.size(0), values.size(1));
    // a = softmax_i(e)                                       B×m×n
    const Var weights = softmax(scores, -1, keep.defined() ? SoftmaxMask::keep(keep) : SoftmaxMask{});
    // f = Σ_i a_i y_i                                        B×m×d_y
    return {attend(weights, values), weights};
}

}  // namespace

Var gaussian_kernel_scores(const Var& queries, const Var& keys) {
    // x_j − x_l for every pair                              B×m×n×p
    const Var diff = sub(unsqueeze(queries, 2), unsqueeze(keys, 1));
    // e_{jl} = −½ ‖x_j − x_l‖²                               B×m×n
    return mul(sum(square(diff), -1), real(-0.5));
}

AttentionOutput nadaraya_watson_pooling(const Var& queries, const Var& keys, const Var& values, const Tensor& mask) {
    const std::string who = "nadaraya_watson_pooling";
    check_points(who, queries, keys, values);
    // the padded points hidden (attention/padding.hpp)
    const VisibleInputs p = visible(queries, keys, values, scores_keep_mask(who, mask, keys.size(0), keys.size(1)));
    return pool(who, gaussian_kernel_scores(p.queries, p.keys), p.values, mask);
}

ParametricNadarayaWatsonPooling::ParametricNadarayaWatsonPooling(real initial_w) {
    w = register_parameter("w", Tensor::full(Shape{1}, initial_w));
}

AttentionOutput ParametricNadarayaWatsonPooling::forward(const Var& queries, const Var& keys, const Var& values,
                                                         const Tensor& mask) {
    check_points(id(), queries, keys, values);
    // the padded points hidden (attention/padding.hpp)
    const VisibleInputs p = visible(queries, keys, values, scores_keep_mask(id(), mask, keys.size(0), keys.size(1)));
    // −½ ((x − x_i) w)² = w² · (−½ ‖x − x_i‖²)                B×m×n
    const Var scores = mul(gaussian_kernel_scores(p.queries, p.keys), square(w));
    return pool(id(), scores, p.values, mask);
}

Taxonomy ParametricNadarayaWatsonPooling::taxonomy() const {
    Taxonomy t;
    t.scoring = "similarity_score";  // a (scaled) negative squared distance
    return t;
}

}  // namespace attn
