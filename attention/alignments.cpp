// The alignment functions (entries 22–28): scores in, weights out.
// The formulas, the papers and the shape legend are in attention/alignments.hpp.
#include "attention/alignments.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/record.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

// scores B×m×n; the mask, if any, must broadcast to them.
void check_scores(const std::string& who, const AlignmentInput& in) {
    check_rank(who, "scores", in.scores, 3);
    if (in.mask.defined()) broadcast_shapes(in.mask.shape(), in.scores.shape(), who.c_str());
}

// The keep mask as a full B×m×n tensor of 0/1 (all ones when undefined).
Tensor full_mask(const Tensor& mask, const Shape& scores_shape) {
    if (!mask.defined()) return Tensor::ones(scores_shape);
    Tensor keep = expand(mask, scores_shape);
    for (int64_t i = 0; i < keep.numel(); ++i) keep[i] = keep[i] != 0 ? 1 : 0;
    return keep;
}

// B×m: 1 where the row keeps at least one position.
Tensor alive_rows(const Tensor& keep) { return gt(sum(keep, -1), Tensor::scalar(0)); }

}  // namespace

Var masked_softmax(const Var& scores, const Tensor& mask, bool fused) {
    const SoftmaxMask keep = mask.defined() ? SoftmaxMask::keep(mask) : SoftmaxMask{};
    return fused ? softmax_fused(scores, -1, keep) : softmax(scores, -1, keep);
}

// ---- 22. soft_alignment --------------------------------------------------------------------------

SoftAlignment::SoftAlignment(real temperature) : temperature_(temperature) {
    if (!(temperature > 0)) throw std::invalid_argument("soft_alignment: the temperature must be > 0");
}

Var SoftAlignment::align(const AlignmentInput& in) {
    check_scores(id(), in);
    // a_l = exp(e_l/T) / Σ_j exp(e_j/T) over the kept positions   B×m×n
    return masked_softmax(temperature_ == 1 ? in.scores : in.scores / temperature_, in.mask, is_fast());
}

// ---- 23. hard_alignment --------------------------------------------------------------------------

HardAlignment::HardAlignment(Generator& gen, const Options& options) : gen_(gen), options_(options) {
    set_soft_probability(options.soft_probability);  // the one range check
}

HardAlignment::Sample HardAlignment::sample(const AlignmentInput& in) {
    check_scores(id(), in);
    const int64_t n = in.scores.size(2);
    Sample s;
    s.probs = masked_softmax(in.scores, in.mask, is_fast());  // a = softmax(e)   B×m×n
    const Tensor alive = alive_rows(full_mask(in.mask, in.scores.shape()));  // B×m

    // m ~ Categorical(a) (or argmax a in evaluation); a fully masked row draws
    // from a uniform stand-in and is then zeroed: index −1, weights 0.
    const bool draw = is_training() || options_.sample_in_eval;
    const Tensor drawable = add(s.probs.value(), unsqueeze(sub(Tensor::ones(alive.shape()), alive), -1));
    const Tensor picked = draw ? sample_categorical(drawable, gen_) : argmax(drawable, -1);  // B×m
    s.indices = where(alive, picked, Tensor::full(alive.shape(), -1));
    const Tensor hard = mul(one_hot(picked, n), unsqueeze(alive, -1));  // onehot(m)   B×m×n

    // With probability soft_probability (training only), a row takes the
    // expected context instead: weights a, trained by backprop, not REINFORCE.
    s.soft = Tensor::zeros(alive.shape());
    if (is_training() && options_.soft_probability > 0)
        for (int64_t r = 0; r < s.soft.numel(); ++r) s.soft[r] = gen_.uniform() < options_.soft_probability ? 1 : 0;

    // log a_m, from log_softmax for stability; 0 where soft or fully masked.
    const Var log_a = in.mask.defined() ? log_softmax(in.scores, -1, SoftmaxMask::keep(in.mask))
                                        : log_softmax(in.scores, -1);             // B×m×n
    const Var log_a_m = squeeze(gather(log_a, -1, unsqueeze(picked, -1)), -1);    // B×m
    const Tensor reinforced = mul(alive, sub(Tensor::ones(alive.shape()), s.soft));
    s.log_prob = where(reinforced, log_a_m, Var(Tensor::zeros(alive.shape())));

    // H[a] = −Σ_l a_l log a_l, with 0·log 0 = 0: log(a + [a = 0]) is log a where
    // a > 0 and log 1 = 0 where a = 0, so neither value nor gradient is NaN.
    const Tensor zero_prob = eq(s.probs.value(), Tensor::scalar(0));
    s.entropy = -sum(s.probs * log(s.probs + Var(zero_prob)), -1);  // B×m

    const Var one_hot_weights(hard);
    s.weights = options_.soft_probability > 0 ? where(unsqueeze(s.soft, -1), s.probs, one_hot_weights)
                                              : one_hot_weights;  // B×m×n
    return s;
}

void HardAlignment::set_soft_probability(double p) {
    if (!(p >= 0 && p <= 1))
        throw std::invalid_argument(id() + ": soft_probability must be in [0, 1], got " + std::to_string(p));
    options_.soft_probability = p;
}

Var HardAlignment::align(const AlignmentInput& in) {
    last_ = sample(in);
    return last_.weights;
}

// ---- 24. local_monotonic_alignment ---------------------------------------------------------------

LocalMonotonicAlignment::LocalMonotonicAlignment(int64_t half_width) : D_(half_width) {
    if (half_width < 0) throw std::invalid_argument("local_monotonic_alignment: the half-width D must be >= 0");
}

Var LocalMonotonicAlignment::align(const AlignmentInput& in) {
    check_scores(id(), in);
    const int64_t B = in.scores.size(0), m = in.scores.size(1), n = in.scores.size(2);
    if (in.positions.defined() && in.positions.numel() != B * m)
        throw std::invalid_argument(id() + ": positions " + in.positions.shape().str() + " need one per query (" +
                                    Shape{B, m}.str() + ") for scores " + in.scores.shape().str());
    // The window W = {l : |l − p| ≤ D}, clipped to [0, n) by construction.
    Tensor window = Tensor::zeros(Shape{B, m, n});  // B×m×n
    for (int64_t r = 0; r < B * m; ++r) {
        const real p = in.positions.defined() ? in.positions[r] : static_cast<real>(r % m);
        for (int64_t l = 0; l < n; ++l) window[r * n + l] = std::abs(static_cast<real>(l) - p) <= D_ ? 1 : 0;
    }
    // a_l = exp(e_l) / Σ_{j∈W} exp(e_j) in the window, 0 outside   B×m×n
    return masked_softmax(in.scores, combine_masks(window, in.mask), is_fast());
}

// ---- 25. local_predictive_alignment --------------------------------------------------------------

LocalPredictiveAlignment::LocalPredictiveAlignment(int64_t query_dim, int64_t hidden_dim, int64_t half_width,
                                                   Generator& gen)
    : D_(half_width) {
    if (half_width < 1)
        throw std::invalid_argument("local_predictive_alignment: the half-width D must be >= 1 (σ = D/2)");
    W_p = register_parameter("W_p", init::xavier_uniform(Shape{hidden_dim, query_dim}, gen));
    v_p = register_parameter("v_p", init::uniform_fan_in(Shape{hidden_dim}, hidden_dim, gen));
}

Var LocalPredictiveAlignment::predict_position(const Var& queries, const Tensor& lengths) {
    check_rank(id(), "queries", queries, 3);
    if (queries.size(2) != W_p.size(1))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " need width " +
                                    std::to_string(W_p.size(1)));
    const Var hidden = tanh(matmul(queries, W_p, false, true));       // tanh(W_p q)      B×m×d_p
    const Var logit = matmul(hidden, reshape(v_p, {v_p.size(0), 1}));  // v_pᵀ tanh(W_p q)  B×m×1
    return Var(lengths) * sigmoid(logit);                               // p_t = S·σ(…)     B×m×1
}

Var LocalPredictiveAlignment::weights_at(const Var& scores, const Var& centres, const Tensor& mask) const {
    const int64_t B = scores.size(0), m = scores.size(1), n = scores.size(2);
    if (centres.numel() != B * m)
        throw std::invalid_argument(id() + ": centres " + centres.shape().str() + " need one per query (" +
                                    Shape{B, m, 1}.str() + ") for scores " + scores.shape().str());
    const Var p_t = reshape(centres, {B, m, 1});
    // The window W = {l : |l − p_t| ≤ D}: chosen by p_t's value (no gradient).
    Tensor window = Tensor::zeros(Shape{B, m, n});
    for (int64_t r = 0; r < B * m; ++r)
        for (int64_t l = 0; l < n; ++l)
            window[r * n + l] = std::abs(static_cast<real>(l) - p_t.value()[r]) <= D_ ? 1 : 0;
    const Var soft = masked_softmax(scores, combine_masks(window, mask), is_fast());  // softmax_{l∈W}(e_l)   B×m×n

    // exp(−(l − p_t)² / 2σ²), σ = D/2: the only path from a to p_t
    const real sigma = static_cast<real>(D_) / 2;
    const Var l_minus_p = Var(Tensor::arange(n)) - p_t;                        // B×m×n
    const Var gaussian = exp(-square(l_minus_p) / (2 * sigma * sigma));       // B×m×n
    return soft * gaussian;                                                   // a_l   B×m×n
}

Var LocalPredictiveAlignment::align(const AlignmentInput& in) {
    check_scores(id(), in);
    if (!in.queries.defined()) throw std::invalid_argument(id() + ": needs the queries to predict p_t");
    check_rank(id(), "queries", in.queries, 3);
    if (in.queries.size(0) != in.scores.size(0) || in.queries.size(1) != in.scores.size(1))
        throw std::invalid_argument(id() + ": queries " + in.queries.shape().str() + " do not match scores " +
                                    in.scores.shape().str() + " (B×m first)");
    // S: each query's source length, the number of keys it may attend to   B×m×1
    const Tensor S = sum(full_mask(in.mask, in.scores.shape()), -1, /*keepdim=*/true);
    return weights_at(in.scores, predict_position(in.queries, S), in.mask);
}

// ---- 26. reinforced_alignment ----------------------------------------------------------------------

ReinforcedAlignment::Sampler::Sampler(int64_t token_dim, int64_t hidden_dim, Generator& gen) {
    W_1 = register_parameter("W_1", init::xavier_uniform(Shape{hidden_dim, 2 * token_dim}, gen));
    b_1 = register_parameter("b_1", init::uniform_fan_in(Shape{hidden_dim}, 2 * token_dim, gen));
    w_2 = register_parameter("w_2", init::uniform_fan_in(Shape{hidden_dim}, hidden_dim, gen));
    b_2 = register_parameter("b_2", Tensor::zeros(Shape{1}));
}

// The sampler's logit s_l = MLP([x_l; x̄]); π_l = σ(s_l).
Var ReinforcedAlignment::Sampler::logits(const Var& tokens_in, const Tensor& valid) {
    const int64_t B = tokens_in.size(0), n = tokens_in.size(1), d = tokens_in.size(2);
    const Tensor valid_col = reshape(valid, {B, n, 1});
    // padding zeroed (by selection) first: x̄ would carry its NaN (0·NaN) to every logit
    const Var tokens = hide_unseen_keys(tokens_in, key_mask(valid));
    const Tensor count = maximum(sum(valid_col, 1, true), Tensor::scalar(1));   // B×1×1
    const Var x_bar = sum(tokens * Var(valid_col), 1, true) / Var(count);       // x̄ over the real tokens  B×1×d
    const Var features = concat({tokens, expand(x_bar, Shape{B, n, d})}, 2);     // [x_l; x̄]   B×n×2d
    const Var hidden = tanh(matmul(features, W_1, false, true) + b_1);           // B×n×d_h
    return squeeze(matmul(hidden, reshape(w_2, {w_2.size(0), 1})), -1) + b_2;  // s = w_2ᵀ hidden + b_2   B×n
}

ReinforcedAlignment::ReinforcedAlignment(int64_t token_dim, int64_t hidden_dim, Generator& gen)
    : attending(token_dim, hidden_dim, gen), attended(token_dim, hidden_dim, gen), gen_(gen) {
    register_module("attending", attending);
    register_module("attended", attended);
}

ReinforcedAlignment::Selection ReinforcedAlignment::select(Sampler& sampler, const Var& tokens,
                                                           const Tensor& valid) {
    // z_l ~ Bernoulli(π_l) in training; z_l = [π_l > 0.5] in evaluation; every
    // real token while keeping all. Padding is never kept.
    const Var s = sampler.logits(tokens, valid);  // s   B×n
    const Tensor probs = sigmoid(s.value());      // π, to draw with
    Tensor z = Tensor::zeros(probs.shape());
    for (int64_t i = 0; i < z.numel(); ++i) {
        const double u = keep_all_ ? 0 : is_training() ? gen_.uniform() : 0.5;
        z[i] = valid[i] != 0 && u < probs[i] ? 1 : 0;
    }
    Selection sel = score_selection(s, valid, z);
    if (keep_all_) sel.log_prob = Var(Tensor::zeros(sel.log_prob.shape()));  // nothing was chosen
    return sel;
}

ReinforcedAlignment::Selection ReinforcedAlignment::score_selection(const Var& s, const Tensor& valid, Tensor z) {
    Selection sel;
    sel.probs = sigmoid(s);  // π_l   B×n
    sel.z = std::move(z);
    // log p(z_l) = z log π + (1 − z) log(1 − π) = −softplus((1 − 2z)·s), stable for any s
    const Tensor sign = sub(Tensor::ones(sel.z.shape()), mul(sel.z, 2));  // 1 − 2z
    sel.log_prob = sum(-softplus(s * Var(sign)) * Var(valid), -1);       // Σ over real tokens   B
    // kept_b = Σ_l z_l / Σ_l valid_l  (0 for an example with no real token)
    sel.kept = div(sum(sel.z, -1), maximum(sum(valid, -1), Tensor::scalar(1)));  // B
    return sel;
}

Var ReinforcedAlignment::policy_loss(const Selection& selection, const Tensor& task_loss, real sparsity,
                                     real baseline) {
    if (!selection.log_prob.defined())
        throw std::invalid_argument("reinforced_alignment: policy_loss needs a selection (call align first)");
    if (task_loss.rank() != 1 || task_loss.numel() != selection.log_prob.numel())
        throw std::invalid_argument("reinforced_alignment: policy_loss needs one task loss per example (" +
                                    selection.log_prob.shape().str() + "), got " + task_loss.shape().str());
    // r_b − baseline = −(L_b + λ·kept_b) − baseline, a constant for the gradient   B
    const Tensor advantage = sub(neg(add(task_loss, mul(selection.kept, sparsity))), Tensor::scalar(baseline));
    return -mean(Var(advantage) * selection.log_prob);  // −mean_b (r_b − baseline)·log p(z_b)
}

Var ReinforcedAlignment::policy_loss(const Tensor& task_loss, real sparsity, real baseline) const {
    return policy_loss(last_attending_, task_loss, sparsity, baseline) +
           policy_loss(last_attended_, task_loss, sparsity, baseline);
}

Var ReinforcedAlignment::restricted_softmax(const Var& scores, const Tensor& mask, const Tensor& z_attending,
                                            const Tensor& z_attended) {
    const int64_t B = scores.size(0), m = scores.size(1), n = scores.size(2);
    // keep pair (i, l) iff z^att_i = z^ed_l = 1 (and the mask keeps it)   B×m×n
    const Tensor pairs = mul(reshape(z_attending, {B, m, 1}), reshape(z_attended, {B, 1, n}));
    // a_il = z^att_i z^ed_l exp(e_il) / Σ_j z^att_i z^ed_j exp(e_ij)
    return masked_softmax(scores, combine_masks(pairs, mask));
}

Var ReinforcedAlignment::align(const AlignmentInput& in) {
    check_scores(id(), in);
    const int64_t B = in.scores.size(0), n = in.scores.size(2);
    if (!in.queries.defined() || in.queries.rank() != 3 || in.scores.size(1) != n || in.queries.size(0) != B ||
        in.queries.size(1) != n)
        throw std::invalid_argument(id() + ": self-attention needs the tokens as queries (B×n×d) and scores " +
                                    "B×n×n; got " +
                                    (in.queries.defined() ? in.queries.shape().str() : std::string("no queries")) +
                                    " and scores " + in.scores.shape().str());
    // A token is real if some query may attend to it.
    const Tensor valid = max(full_mask(in.mask, in.scores.shape()), 1);  // B×n
    last_attending_ = select(attending, in.queries, valid);
    last_attended_ = select(attended, in.queries, valid);
    return restricted_softmax(in.scores, in.mask, last_attending_.z, last_attended_.z);
}

// ---- 27. gumbel_softmax_alignment ---------------------------------------------------------------------

GumbelSoftmaxAlignment::GumbelSoftmaxAlignment(Generator& gen, real temperature, bool straight_through)
    : gen_(gen), tau_(temperature), straight_through_(straight_through) {
    if (!(temperature > 0)) throw std::invalid_argument("gumbel_softmax_alignment: the temperature τ must be > 0");
}

Var GumbelSoftmaxAlignment::align(const AlignmentInput& in) {
    check_scores(id(), in);
    const Var log_a = in.mask.defined() ? log_softmax(in.scores, -1, SoftmaxMask::keep(in.mask))
                                        : log_softmax(in.scores, -1);  // log a   B×m×n (−∞ where masked)
    // g_l = −log(−log u_l), u_l ~ U(0, 1); none in evaluation mode
    Tensor g = Tensor::zeros(in.scores.shape());
    if (is_training())
        for (int64_t i = 0; i < g.numel(); ++i) {
            const double u = std::max(gen_.uniform(), std::numeric_limits<double>::min());
            g[i] = static_cast<real>(-std::log(-std::log(u)));
        }
    const Var y = masked_softmax((log_a + Var(g)) / tau_, in.mask, is_fast());  // y = softmax((log a + g)/τ)   B×m×n
    if (!straight_through_) return y;

    // Straight-through: forward onehot(argmax y), backward ∂L/∂y = ∂L/∂onehot.
    const Tensor alive = alive_rows(full_mask(in.mask, in.scores.shape()));
    const Tensor hard = mul(one_hot(argmax(y.value(), -1), y.size(2)), unsqueeze(alive, -1));  // B×m×n
    return record("straight_through", hard, {y}, [](Backward& bw) { bw.accumulate(0, bw.grad()); });
}

// ---- 28. elementwise_alignment ----------------------------------------------------------------------

ElementwiseAlignment::ElementwiseAlignment(Kind kind, Normalizer normalizer, real eps)
    : kind_(kind), normalizer_(normalizer), eps_(eps) {
    if (kind == Kind::sigmoid && normalizer != Normalizer::one)
        throw std::invalid_argument("elementwise_alignment: the sigmoid takes no normaliser (s = 1)");
}

Var ElementwiseAlignment::align(const AlignmentInput& in) {
    check_scores(id(), in);
    const Tensor keep = full_mask(in.mask, in.scores.shape());  // B×m×n of 0/1
    if (kind_ == Kind::sigmoid) return sigmoid(in.scores) * Var(keep);  // a_l = σ(e_l), 0 where masked
    const Var r = relu(in.scores) * Var(keep);                          // ReLU(e_l)   B×m×n
    switch (normalizer_) {
        case Normalizer::one: return r;  // s = 1
        case Normalizer::length: {
            const Tensor n = maximum(sum(keep, -1, true), Tensor::scalar(1));  // s = n (kept positions)  B×m×1
            return r / Var(n);
        }
        case Normalizer::sum: return r / (sum(r, -1, true) + eps_);  // s = Σ_j ReLU(e_j) + ε
    }
    throw std::invalid_argument("elementwise_alignment: unknown normaliser");
}

}  // namespace attn
