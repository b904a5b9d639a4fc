// Multiplicity of queries (survey §3.3.2, catalog entries 39, 42, 43): how many
// queries ask about the same features for one prediction.
//
//   39 singular_query_attention  one query per prediction: every single-head,
//                                single-hop module. A taxonomy tag, tested by the
//                                predicate singular_query_attention() of
//                                attention/general.hpp (query_multiplicity = singular).
//   42 multi_hop_attention       S queries in sequence, each refined by the last context
//   43 capsule_attention         one learned query per class, each a "capsule"
//   (40, 41 and 49, the multi-head family, are in attention/multi_head.hpp.)
//
// Shapes (row = position, batch first):
//   B batch · n positions · m queries · S hops · C classes
//   queries B×m×d_q, keys B×n×d_k, values B×n×d_v, mask B×n (1 = may attend)
//
// docs/attention/multi_query.md; tests in tests/grad/test_multi_query.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 42. multi_hop_attention ------------------------------------------------------------
// The survey's general form of Tran & Niederée (2018), Multihop Attention
// Networks for Question Answer Matching, SIGIR; Yang, He, Gao, Deng, Smola
// (2016), Stacked Attention Networks for Image Question Answering, CVPR (SAN);
// Sukhbaatar, Szlam, Weston, Fergus (2015), End-To-End Memory Networks, NeurIPS.
//   c⁽⁰⁾ = (1/n) Σ_l v_l
//   for s = 0 … S−1:
//     q⁽ˢ⁺¹⁾ = transform(q⁽ˢ⁾, c⁽ˢ⁾)
//     e⁽ˢ⁾_l = score([q⁽ˢ⁺¹⁾; c⁽ˢ⁾], k_l)
//     c⁽ˢ⁺¹⁾ = Σ_l softmax(e⁽ˢ⁾)_l v_l
//   output c⁽ˢ⁾, and the weights of every hop.
// transform: residual q + c (SAN, MemN2N; needs d_q = d_v), concat_linear
// W_t [q; c] (W_t d_q×(d_q + d_v)), or identity q. The score and the transform
// are shared by all hops (Tran & Niederée: the parameter count does not depend
// on S) or one per hop (SAN).
class MultiHopAttention : public AttentionModule {
public:
    enum class Transform { residual, concat_linear, identity };
    struct Options {
        int64_t hops = 2;  // S
        bool shared = true;
        Transform transform = Transform::residual;
    };
    // Builds one score for queries [q; c] of width d_q + d_v and the keys.
    using ScoreFactory = std::function<std::unique_ptr<ScoreFunction>(Generator&)>;

    MultiHopAttention(int64_t query_dim, int64_t value_dim, const ScoreFactory& make_score, const Options& options,
                      Generator& gen);

    struct Output {
        Var output;   // c⁽ˢ⁾  B×m×d_v
        Var weights;  // every hop's weights   B×S×m×n
        Var query;    // q⁽ˢ⁾  B×m×d_q
    };
    // queries q⁽⁰⁾ B×m×d_q, keys B×n×d_k, values B×n×d_v, mask
    Output forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {});

    int64_t hops() const { return options_.hops; }
    ScoreFunction& score(int64_t hop);  // the same object for every hop when shared
    std::string id() const override { return "multi_hop_attention"; }
    Taxonomy taxonomy() const override;

    std::vector<Var> W_t;  // concat_linear only: one, or one per hop

private:
    Var transform(int64_t hop, const Var& q, const Var& c);

    Options options_;
    std::vector<std::unique_ptr<ScoreFunction>> scores_;
};

// ---- 43. capsule_attention ----------------------------------------------------------------
// Wang, Sun, Han, Liu, Zhu (2018), Sentiment Analysis by Capsules, WWW
// (RNN-Capsule). One capsule per class c, each with its own learned query:
//   e_{c,l} = q_cᵀ k_l;   a_c = softmax(e_c);   v_c = Σ_l a_{c,l} v_l
//   p_c = σ(w_cᵀ v_c + b_c)     the capsule's state: how present class c is
//   r_c = p_c v_c               its reconstruction
// The prediction is argmax_c p_c; p need not sum to 1.
// Parameters: q C×d_k (row c is q_c), w C×d_v, b C.
class CapsuleAttention : public AttentionModule {
public:
    CapsuleAttention(int64_t num_classes, int64_t key_dim, int64_t value_dim, Generator& gen);

    struct Output {
        Var probabilities;    // p  B×C
        Var representations;  // R  B×C×d_v (row c = r_c)
        Var weights;          // B×C×n (row c = a_c)
    };
    // keys B×n×d_k, values B×n×d_v, mask → the capsules
    Output forward(const Var& keys, const Var& values, const Tensor& mask = {});

    std::string id() const override { return "capsule_attention"; }
    Taxonomy taxonomy() const override;

    Var q, w, b;
};

// hinge(z, y) = (1/C) Σ_{c≠y} max(0, 1 − z_y + z_c), averaged over the batch:
// z B×C, targets B (class indices) → a scalar.
Var capsule_hinge(const Var& z, const Tensor& targets);
// RNN-Capsule's training loss (from the authors' released code):
//   hinge(p, y) + hinge(s, y),   s_c = r_cᵀ f̄,   f̄ the (masked) mean of the features
// features B×n×d_f with d_f = d_v (throws otherwise), mask B×n, targets B.
Var capsule_loss(const CapsuleAttention::Output& capsules, const Var& features, const Tensor& targets,
                 const Tensor& mask = {});

}  // namespace attn
