// The score functions of the survey (§3.2.1, Table 2): catalog entries 15–21.
//
// A score function is override point 1 of the general attention module
// (attention/general.hpp): it compares every query with every key,
//
//     queries B×m×d_q, keys B×n×d_k → scores B×m×n,   E[b, i, l] = score(q_i, k_l)
//
// and an alignment (attention/alignments.hpp) turns the scores into weights.
//
//   15 additive_score          e_l = wᵀ act(W_1 q + W_2 k_l + b)     Bahdanau+ 2015
//   16 dot_score               e_l = qᵀ k_l                          Luong+ 2015
//   17 scaled_dot_score        e_l = qᵀ k_l / √d_k                   Vaswani+ 2017
//   18 general_score           e_l = k_lᵀ W q                        Luong+ 2015
//   19 biased_general_score    e_l = k_lᵀ (W q + b)                  Sordoni+ 2016
//   20 activated_general_score e_l = act(k_lᵀ W q + b), b a scalar   Ma+ 2017 (IAN)
//   21 similarity_score        e_l = β qᵀk_l / (‖q‖‖k_l‖ + ε), or −‖q − k_l‖   Graves+ 2014 (NTM)
//
// Vectors in the formulas are columns; on the row-layout batch the map W q
// becomes Q Wᵀ. Parameters carry the formula's names and the PyTorch layout
// (out×in). docs/attention/scores.md has the derivations and when to use each.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"
#include "tensor/random.hpp"

namespace attn {

// The configurable "act" of the formulas.
enum class Activation { tanh, relu, sigmoid, identity };
Var activate(const Var& x, Activation act);
std::string activation_name(Activation act);

// The additive hidden layer shared by entries 15 and 30:
//   H[b, i, l, :] = act(W_1 q_i + W_2 k_l + b)
// projected_queries B×m×d_w (Q W_1ᵀ), projected_keys B×n×d_w (K W_2ᵀ), bias d_w
// → B×m×n×d_w (the ⊕ of the catalog: every query meets every key).
Var additive_features(const Var& projected_queries, const Var& projected_keys, const Var& bias, Activation act);

// The additive score with tanh as one op, the fast twin of
// additive_features(…, tanh) · w:
//   E[b, i, l] = Σ_a w_a tanh(pq[b, i, a] + pk[b, l, a] + b_a)
// projected_queries pq B×m×d_w, projected_keys pk B×n×d_w, bias d_w (or
// undefined), w d_w → B×m×n. The composed version makes the B×m×n×d_w sum,
// its tanh and their product with w as three ops, each with its own pass and
// its own backward pass; this op makes one pass forward, keeping t (the tanh),
// and one backward, where with G = ∂L/∂E:
//   δ_il = G_il · w ⊙ (1 − t_il²)     ∂pq_i = Σ_l δ_il    ∂pk_l = Σ_i δ_il
//   ∂b = Σ_{b,i,l} δ_il               ∂w = Σ_{b,i,l} G_il · t_il
// AdditiveScore uses it when its `fused` is set (tests/test_scores_fused.cpp:
// the same values and gradients as the composed score).
Var additive_score_fused(const Var& projected_queries, const Var& projected_keys, const Var& bias, const Var& w);

// ---- 15. additive_score ----------------------------------------------------------
// Bahdanau, Cho, Bengio (2015), Neural Machine Translation by Jointly Learning
// to Align and Translate, ICLR. "concat" in Luong et al. (2015).
//   e_l = wᵀ act(W_1 q + W_2 k_l + b)     E = act(Q W_1ᵀ ⊕ K W_2ᵀ + b) w
// W_1 d_w×d_q, W_2 d_w×d_k, b d_w, w d_w.
// The keys' half does not depend on the query: a decoder projects its encoder
// states once per sequence (project_keys) and scores each step against them
// (score_projected); score() does both.
// bias = false leaves b out (b undefined): e_l = wᵀ act(W_1 q + W_2 k_l), the
// form of Bahdanau's decoder and of Pointer Networks.
class AdditiveScore : public ScoreFunction {
public:
    AdditiveScore(int64_t query_dim, int64_t key_dim, int64_t hidden_dim, Generator& gen,
                  Activation act = Activation::tanh, bool bias = true);

    Var score(const Var& queries, const Var& keys) override;
    // keys B×n×d_k → K W_2ᵀ  B×n×d_w
    Var project_keys(const Var& keys);
    // queries B×m×d_q, projected keys B×n×d_w (from project_keys) → B×m×n
    Var score_projected(const Var& queries, const Var& projected_keys);

    std::string id() const override { return "additive_score"; }
    std::string describe() const override;

    Var W_1, W_2, b, w;  // b undefined without a bias
    // false (the default): the composed score, additive_features then · w, to
    // read and step through; true (with tanh): additive_score_fused, the same
    // values without the B×m×n×d_w temporaries. Module::set_fast switches it.
    bool fused = false;

protected:
    void on_set_fast(bool on) override { fused = on; }  // Module::set_fast

private:
    Activation act_;
};

// ---- 16. dot_score -----------------------------------------------------------------
// Luong, Pham, Manning (2015), Effective Approaches to Attention-based Neural
// Machine Translation, EMNLP.   e_l = qᵀ k_l     E = Q Kᵀ      (d_q = d_k)
class DotScore : public ScoreFunction {
public:
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "dot_score"; }
};

// ---- 17. scaled_dot_score ------------------------------------------------------------
// Vaswani et al. (2017), Attention Is All You Need, NeurIPS.
//   e_l = qᵀ k_l / √d_k     E = Q Kᵀ / √d_k
// For q, k with iid unit-variance entries, qᵀk has variance d_k; the scaling
// brings it back to 1, so the softmax does not saturate as d_k grows.
class ScaledDotScore : public ScoreFunction {
public:
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "scaled_dot_score"; }
};

// ---- 18. general_score -----------------------------------------------------------------
// Luong et al. (2015).   e_l = k_lᵀ W q     E = Q Wᵀ Kᵀ      W d_k×d_q
// (Luong writes h_tᵀ W_a h̄_s: the same score with W_a = Wᵀ.)
class GeneralScore : public ScoreFunction {
public:
    GeneralScore(int64_t query_dim, int64_t key_dim, Generator& gen);
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "general_score"; }
    std::string describe() const override;

    Var W;
};

// ---- 19. biased_general_score -------------------------------------------------------------
// Sordoni, Bachman, Trischler, Bengio (2016), Iterative Alternating Neural
// Attention for Machine Reading, arXiv 1606.02245.
//   e_l = k_lᵀ (W q + b)     E = (Q Wᵀ + b) Kᵀ      W d_k×d_q, b d_k
// k_lᵀ b is a learned prior over keys that does not depend on the query.
class BiasedGeneralScore : public ScoreFunction {
public:
    BiasedGeneralScore(int64_t query_dim, int64_t key_dim, Generator& gen);
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "biased_general_score"; }
    std::string describe() const override;

    Var W, b;
};

// ---- 20. activated_general_score ------------------------------------------------------------
// Ma, Li, Zhang, Wang (2017), Interactive Attention Networks for Aspect-Level
// Sentiment Classification, IJCAI (IAN).
//   e_l = act(k_lᵀ W q + b)     E = act(Q Wᵀ Kᵀ + b)      W d_k×d_q, b a scalar
class ActivatedGeneralScore : public ScoreFunction {
public:
    ActivatedGeneralScore(int64_t query_dim, int64_t key_dim, Generator& gen, Activation act = Activation::tanh);
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "activated_general_score"; }
    std::string describe() const override;

    Var W, b;  // b has shape 1

private:
    Activation act_;
};

// ---- 21. similarity_score -------------------------------------------------------------------
// Graves, Wayne, Danihelka (2014), Neural Turing Machines, arXiv 1410.5401
// (content addressing: cosine similarity sharpened by a key strength β ≥ 0).
//   cosine:             e_l = β qᵀk_l / (‖q‖ ‖k_l‖ + ε)          ε = 1e-8
//   negative distance:  e_l = −‖q − k_l‖      (squared: −‖q − k_l‖²)
// A zero vector scores 0 (cosine) and never yields NaN, value or gradient.
class SimilarityScore : public ScoreFunction {
public:
    enum class Kind { cosine, negative_distance };
    struct Options {
        Kind kind = Kind::cosine;
        bool squared = false;     // negative distance only: −‖q − k_l‖²
        real beta = 1;            // cosine only: the key strength β
        bool learn_beta = false;  // register β as a trainable parameter "beta"
        real eps = real(1e-8);
    };
    SimilarityScore() : SimilarityScore(Options{}) {}
    explicit SimilarityScore(const Options& options);

    Var score(const Var& queries, const Var& keys) override;
    // Cosine with a key strength given per query (NTM's controller emits β_t):
    // beta broadcastable to B×m×n, e.g. B×m×1.
    Var cosine(const Var& queries, const Var& keys, const Var& beta) const;
    Var negative_distance(const Var& queries, const Var& keys) const;

    std::string id() const override { return "similarity_score"; }
    std::string describe() const override;

    Var beta;  // shape 1; a parameter when learn_beta, else a constant

private:
    Options options_;
};

// ---- 81. low_rank_bilinear_score ------------------------------------------------------------
// Kim, On, Lim, Kim, Ha, Zhang (2017), Hadamard Product for Low-rank Bilinear
// Pooling, ICLR (MLB attention). A bilinear score kᵀ W q with W of rank r,
// written as a Hadamard product of two projections:
//   e_l = pᵀ (tanh(U q) ∘ tanh(V k_l))     U r×d_q, V r×d_k, p r
// Added after the catalog's 80 entries, as the worked example of docs/extending.md.
class LowRankBilinearScore : public ScoreFunction {
public:
    LowRankBilinearScore(int64_t query_dim, int64_t key_dim, int64_t rank, Generator& gen);
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "low_rank_bilinear_score"; }

    Var U, V, p;
};

// ---- Luong's location score (part of entry 32, luong_attention) -----------------------------
// Luong et al. (2015): a_t = softmax(W_a h_t), one score per source position
// from the query alone; the keys only say how many there are, so it needs a
// maximum length. queries B×m×d_q, keys B×n×· → (Q W_aᵀ)[:, :, :n]   B×m×n.
class LocationScore : public ScoreFunction {
public:
    LocationScore(int64_t query_dim, int64_t max_length, Generator& gen);
    Var score(const Var& queries, const Var& keys) override;
    std::string id() const override { return "location_score"; }

    Var W_a;  // n_max×d_q
};

}  // namespace attn
