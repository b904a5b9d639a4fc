// Sequence variants (entries 53, 55, 56): Show-Attend-Tell's step, HAN's pooling, structured attention.
// The formulas, the papers and the shape legend are in attention/sequence_variants.hpp.
#include "attention/sequence_variants.hpp"

#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "attention/scores.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

// ---- 53. doubly_stochastic_soft_attention ------------------------------------------------------

DoublyStochasticSoftAttention::DoublyStochasticSoftAttention(int64_t annotation_dim, int64_t hidden_dim,
                                                             int64_t attention_dim, Generator& gen, bool gated)
    : score(hidden_dim, annotation_dim, attention_dim, gen) {
    register_module("score", score);
    if (gated) {
        w_beta = register_parameter("w_beta", init::uniform_fan_in({hidden_dim}, hidden_dim, gen));
        b_beta = register_parameter("b_beta", init::uniform_fan_in({1}, hidden_dim, gen));
    }
}

DoublyStochasticSoftAttention::Memory DoublyStochasticSoftAttention::precompute(const Var& annotations_in,
                                                                                const Tensor& mask) {
    check_width(id(), "annotations", annotations_in, score.W_2.size(1), 3);
    const Tensor keep = scores_keep_mask(id(), mask, annotations_in.size(0), annotations_in.size(1));
    // Padded locations are zeroed (by selection) before anything reads them,
    // so a NaN there reaches no output and no gradient.
    const Var annotations = hide_unseen_keys(annotations_in, keep);
    // W_2 a_i for every location, once per image      B×L×d_w
    const Var projected = score.project_keys(annotations);
    return {annotations, projected, keep};
}

Var DoublyStochasticSoftAttention::scores(const Var& previous_hidden, const Memory& memory) {
    check_width(id(), "previous hidden state", previous_hidden, score.W_1.size(1), 2);
    if (previous_hidden.size(0) != memory.annotations.size(0))
        throw std::invalid_argument(id() + ": hidden state " + previous_hidden.shape().str() + " and annotations " +
                                    memory.annotations.shape().str() + " need the same batch size");
    // e_ti = wᵀ tanh(W_1 h_{t−1} + W_2 a_i + b): one query per example   B×1×L → B×L
    return squeeze(score.score_projected(unsqueeze(previous_hidden, 1), memory.projected), 1);
}

Var DoublyStochasticSoftAttention::gate(const Var& previous_hidden) {
    if (!w_beta.defined()) return Var(Tensor::ones(Shape{previous_hidden.size(0), 1}));
    // β_t = σ(w_βᵀ h_{t−1} + b_β)                   B×1
    return sigmoid(add(matmul(previous_hidden, as_row(w_beta), false, true), b_beta));
}

DoublyStochasticSoftAttention::Output DoublyStochasticSoftAttention::step(const Var& previous_hidden,
                                                                          const Memory& memory) {
    const Var e = unsqueeze(scores(previous_hidden, memory), 1);  // e_t   B×1×L
    // α_t = softmax(e_t)                                         B×1×L
    const Var alpha = masked_softmax(e, memory.keep, is_fast());
    // Σ_i α_ti a_i                                                B×D
    const Var context = squeeze(attend(alpha, memory.annotations), 1);
    // ẑ_t = β_t Σ_i α_ti a_i                                      B×D
    const Var beta = gate(previous_hidden);
    return {mul(beta, context), squeeze(alpha, 1), beta};
}

Taxonomy DoublyStochasticSoftAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive_score";
    return t;
}

Var doubly_stochastic_penalty(const Var& weights, real lambda, const Tensor& step_mask) {
    check_rank("doubly_stochastic_penalty", "weights", weights, 3);
    if (step_mask.defined() && step_mask.shape() != Shape{weights.size(0), weights.size(1)})
        throw std::invalid_argument("doubly_stochastic_penalty: step mask " + step_mask.shape().str() +
                                    " does not fit weights " + weights.shape().str() + " (it needs B×T)");
    // Padded steps count for nothing: their rows are zeroed by selection first
    // (0·NaN would be NaN), then by the mask's product.
    const Var alphas = step_mask.defined()
                           ? mul(hide_unseen_keys(weights, key_mask(step_mask)),
                                 Var(step_mask.reshape(Shape{weights.size(0), weights.size(1), 1})))
                           : weights;
    // Σ_t α_ti: the attention location i received over the caption   B×L
    const Var received = sum(alphas, 1);
    // λ Σ_i (1 − Σ_t α_ti)²                                         B → mean over the batch
    return mul(mean(sum(square(real(1) - received), -1)), lambda);
}

// ---- 55. feed_forward_attention ------------------------------------------------------------------

FeedForwardAttention::FeedForwardAttention(int64_t dim, Generator& gen) {
    w = register_parameter("w", init::uniform_fan_in({dim}, dim, gen));
    b = register_parameter("b", init::uniform_fan_in({1}, dim, gen));
}

AttentionOutput FeedForwardAttention::forward(const Var& states_in, const Tensor& mask) {
    check_width(id(), "states", states_in, w.size(0), 3);
    const Tensor keep = scores_keep_mask(id(), mask, states_in.size(0), states_in.size(1));
    const Var states = hide_unseen_keys(states_in, keep);  // padded steps zeroed, by selection
    // e_t = tanh(wᵀ h_t + b)                        B×1×T
    const Var e = tanh(add(matmul(as_row(w), states, false, true), b));
    // α = softmax(e)                                B×1×T
    const Var alpha = masked_softmax(e, keep, is_fast());
    return {attend(alpha, states), alpha};  // c = Σ_t α_t h_t   B×1×d
}

Taxonomy FeedForwardAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "activated_general_score";  // act(k_lᵀ w + b): a constant query folded into w
    t.query = "self";
    return t;
}

// ---- 56. structured_self_attention ---------------------------------------------------------------

StructuredSelfAttention::StructuredSelfAttention(int64_t dim, int64_t attention_dim, int64_t rows, Generator& gen) {
    W_s1 = register_parameter("W_s1", init::xavier_uniform({attention_dim, dim}, gen));
    W_s2 = register_parameter("W_s2", init::xavier_uniform({rows, attention_dim}, gen));
}

StructuredSelfAttention::Output StructuredSelfAttention::forward(const Var& states_in, const Tensor& mask) {
    check_width(id(), "states", states_in, W_s1.size(1), 3);
    const Tensor keep = scores_keep_mask(id(), mask, states_in.size(0), states_in.size(1));
    const Var states = hide_unseen_keys(states_in, keep);  // padded steps zeroed, by selection
    // tanh(W_s1 Hᵀ), in rows: tanh(H W_s1ᵀ)          B×n×d_a
    const Var hidden = tanh(matmul(states, W_s1, false, true));
    // W_s2 tanh(W_s1 Hᵀ)                              r×d_a · (B×n×d_a)ᵀ → B×r×n
    const Var e = matmul(W_s2, hidden, false, true);
    // A = softmax_row(⋯)                              B×r×n
    const Var A = masked_softmax(e, keep, is_fast());
    // M = A H                                         B×r×d
    return {attend(A, states), A, structured_penalty(A)};
}

Taxonomy StructuredSelfAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive_score";
    t.query = "self";
    return t;
}

Var structured_penalty(const Var& weights) {
    check_rank("structured_penalty", "weights", weights, 3);
    const int64_t r = weights.size(1);
    Tensor identity = Tensor::zeros(Shape{r, r});
    for (int64_t i = 0; i < r; ++i) identity[i * r + i] = 1;
    // A Aᵀ − I                                        B×r×r
    const Var gram = sub(matmul(weights, weights, false, true), Var(identity));
    // ‖A Aᵀ − I‖_F²                                   B
    return sum(square(gram), std::vector<int>{1, 2});
}

}  // namespace attn
