// Sequence attention variants (catalog entries 53, 55, 56): three ways to pool
// or read a sequence that seeds 003 and 004 single out.
//
//   53 doubly_stochastic_soft_attention  Xu+ 2015   Show-Attend-Tell's soft attention step,
//                                                   with its gate and its coverage penalty
//   55 feed_forward_attention            Raffel & Ellis 2015   a query-free, order-blind pooling
//   56 structured_self_attention         Lin+ 2017  r pooling rows and a diversity penalty
//
// Shapes (row = position, batch first):
//   B batch · L image locations / n, T positions · D annotation width · d_h
//   decoder state · d_w, d_a attention widths · r attention rows
//   masks: B×n key masks (1 = may attend)
//
// docs/attention/sequence_variants.md; tests in tests/grad/test_sequence_variants.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 53. doubly_stochastic_soft_attention ----------------------------------------------------
// Xu, Ba, Kiros, Cho, Courville, Salakhutdinov, Zemel, Bengio (2015), Show,
// Attend and Tell: Neural Image Caption Generation with Visual Attention, ICML
// (soft, "deterministic" attention).
//   e_ti = f_att(a_i, h_{t−1}) = wᵀ tanh(W_1 h_{t−1} + W_2 a_i + b)
//                                                    the additive score (entry 15), `score`:
//                                                    query h_{t−1}, keys the annotations
//   α_t  = softmax(e_t)                              the soft alignment (entry 22)
//   β_t  = σ(w_βᵀ h_{t−1} + b_β)                      the gating scalar
//   ẑ_t  = β_t Σ_i α_ti a_i
// score.W_1 d_w×d_h, score.W_2 d_w×D, score.b d_w, score.w d_w (Xu et al.'s
// W_h, W_a, b_a, v); w_β d_h, b_β 1. W_2 a_i does not depend on t:
// precompute() projects the annotations once per image, step() runs inside
// the decoder loop. The doubly stochastic penalty over the whole caption is
// doubly_stochastic_penalty() below.
class DoublyStochasticSoftAttention : public AttentionModule {
public:
    // gated = false drops β (β ≡ 1): then the step is additive score + soft alignment.
    DoublyStochasticSoftAttention(int64_t annotation_dim, int64_t hidden_dim, int64_t attention_dim, Generator& gen,
                                  bool gated = true);

    struct Memory {
        Var annotations;  // A            B×L×D
        Var projected;    // A W_2ᵀ        B×L×d_w (score.project_keys)
        Tensor keep;      // B×1×L keep mask, or undefined
    };
    Memory precompute(const Var& annotations, const Tensor& mask = {});

    struct Output {
        Var output;   // ẑ_t  B×D
        Var weights;  // α_t  B×L
        Var gate;     // β_t  B×1 (ones when not gated)
    };
    // One decoder step from h_{t−1} B×d_h.
    Output step(const Var& previous_hidden, const Memory& memory);
    // e_t = wᵀ tanh(W_1 h_{t−1} + W_2 a_i + b)   B×L (for a hard variant: sample from softmax(e_t))
    Var scores(const Var& previous_hidden, const Memory& memory);
    // β_t = σ(w_βᵀ h_{t−1} + b_β)   B×1
    Var gate(const Var& previous_hidden);

    std::string id() const override { return "doubly_stochastic_soft_attention"; }
    Taxonomy taxonomy() const override;

    AdditiveScore score;  // f_att: queries d_h, keys D, width d_w
    Var w_beta, b_beta;   // undefined when not gated
};

// The doubly stochastic regulariser: each location should receive, over the
// whole caption, about as much attention as any other.
//   λ Σ_i (1 − Σ_t α_ti)²      per caption, averaged over the batch
// weights B×T×L (every step's α_t); step_mask B×T leaves out padded steps.
Var doubly_stochastic_penalty(const Var& weights, real lambda = 1, const Tensor& step_mask = {});

// ---- 55. feed_forward_attention ---------------------------------------------------------------
// Raffel & Ellis (2015), Feed-Forward Networks with Attention Can Solve Some
// Long-Term Memory Problems, arXiv 1512.08756.
//   e_t = a(h_t) = tanh(wᵀ h_t + b)    a one-layer tanh "learnable function"
//   α = softmax(e);  c = Σ_t α_t h_t
// w d, b 1. The weights ignore order: permuting the steps leaves c unchanged.
class FeedForwardAttention : public AttentionModule {
public:
    FeedForwardAttention(int64_t dim, Generator& gen);

    // states H B×T×d, mask → c B×1×d, α B×1×T
    AttentionOutput forward(const Var& states, const Tensor& mask = {});

    std::string id() const override { return "feed_forward_attention"; }
    Taxonomy taxonomy() const override;

    Var w, b;
};

// ---- 56. structured_self_attention ------------------------------------------------------------
// Lin, Feng, dos Santos, Yu, Xiang, Zhou, Bengio (2017), A Structured
// Self-Attentive Sentence Embedding, ICLR.
//   A = softmax_row(W_s2 tanh(W_s1 Hᵀ))     r×n: r pooling rows
//   M = A H                                  r×d: r views of the sentence
//   P = ‖A Aᵀ − I‖_F²                        the penalty that keeps the rows apart
// W_s1 d_a×d, W_s2 r×d_a. With r = 1 it is constant-query self-attention
// (entry 35) with b = 0: the rows of W_s1 act as d_a learned queries and W_s2
// recombines their tanh'd similarities.
class StructuredSelfAttention : public AttentionModule {
public:
    StructuredSelfAttention(int64_t dim, int64_t attention_dim, int64_t rows, Generator& gen);

    struct Output {
        Var output;   // M  B×r×d
        Var weights;  // A  B×r×n
        Var penalty;  // P  B
    };
    // H B×n×d, mask → M, A, P
    Output forward(const Var& states, const Tensor& mask = {});

    std::string id() const override { return "structured_self_attention"; }
    Taxonomy taxonomy() const override;

    Var W_s1, W_s2;
};

// ‖A Aᵀ − I‖_F², weights A B×r×n → B. Zero exactly when the rows of A are
// one-hot on distinct positions.
Var structured_penalty(const Var& weights);

}  // namespace attn
