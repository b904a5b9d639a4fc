// Co-attention and rotatory attention (survey §3.1.1, catalog entries 3–9):
// attention over the features of two (or three) inputs at once, each input's
// attention guided by the other's.
//
//    3 alternating_co_attention    input 1 alone → input 2 guided by it → input 1 guided by that   Lu+ 2016
//    4 interactive_co_attention    each input attended with the other's mean as query               Ma+ 2017 (IAN)
//    5 parallel_co_attention       both at once, through an affinity matrix A                       Lu+ 2016
//    6 trilinear_affinity          A_ij = w_Aᵀ [k1_i; k2_j; k1_i ∘ k2_j]                            Seo+ 2017 (BiDAF)
//    7 max_affinity_co_attention   e1_i = max_j A_ij, e2_j = max_i A_ij                            Seo+ 2017 (BiDAF)
//    8 multi_grained_co_attention  coarse (entry 4) and fine (entries 6, 7) in one vector           Fan+ 2018 (MGAN)
//    9 rotatory_attention          left/right contexts and a target attend to each other           Zheng & Xia 2018
//
// Entry 2, `singular_features_attention`, is the taxonomy tag of every module
// over one input (attention/general.hpp); the modules here report
// multiplicity "co-attention" or "rotatory" instead.
//
// Shapes (row = position, batch first):
//   F1 B×n1×d1, F2 B×n2×d2 the two inputs (keys = values = features, as in the papers)
//   mask1 B×n1, mask2 B×n2 key masks (1 = real position, 0 = padding), optional
//   → context c^(i) B×d_i, weights a^(i) B×n_i, output [c^(1); c^(2)] B×(d1+d2)
// Padding gets exactly zero weight; an input whose positions are all masked
// gives zero weights and a zero context, never NaN.
//
// docs/attention/co_attention.md; tests: the registry entries in tests/grad/test_co_attention.cpp,
// their references in tests/grad/test_co_attention_reference.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// What the co-attentions return: both contexts, their concatenation and both
// weight vectors; the affinity matrix where the mechanism builds one.
struct CoAttentionOutput {
    Var output;    // [c^(1); c^(2)]  B×(d1+d2)
    Var context1;  // c^(1)           B×d1
    Var context2;  // c^(2)           B×d2
    Var weights1;  // a^(1)           B×n1
    Var weights2;  // a^(2)           B×n2
    Var affinity;  // A               B×n1×n2 (parallel, max-affinity); undefined otherwise
};

// ---- 3. alternating_co_attention ------------------------------------------------------------
// Lu, Yang, Batra, Parikh (2016), Hierarchical Question-Image Co-Attention for
// Visual Question Answering, NeurIPS. One operator x̂ = A(X; g), run three times:
//   A(X; g):  e_l = wᵀ tanh(W_q g + W x_l + b),  a = softmax(e),  x̂ = Σ_l a_l x_l
//   1. c^(0) = A_1(F1; 0)        input 1 summarised without a query
//   2. c^(2) = A_2(F2; c^(0))    input 2 guided by that summary
//   3. c^(1) = A_1(F1; c^(2))    input 1 again, guided by input 2's context
// e_l is the additive score (entry 15) with the guide as its query: query map
// W_1 = W_q, key map W_2 = W. Step 1's guide is a zero query, so W_1 g = 0 and
// step 3 reuses step 1's score (W^(1), b^(1), w^(1)), adding only W_q^(1).
//   score1 (A_1): W_1 = W_q^(1) d_w×d2, W_2 = W^(1) d_w×d1, b, w d_w   "score1.W_1", ...
//   score2 (A_2): W_1 = W_q^(2) d_w×d1, W_2 = W^(2) d_w×d2, b, w d_w
struct AlternatingCoAttentionOutput : CoAttentionOutput {
    Var context0;  // c^(0)  B×d1 (step 1)
    Var weights0;  // a^(0)  B×n1 (step 1)
};

class AlternatingCoAttention : public AttentionModule {
public:
    AlternatingCoAttention(int64_t dim1, int64_t dim2, int64_t attention_dim, Generator& gen);

    AlternatingCoAttentionOutput forward(const Var& features1, const Var& features2, const Tensor& mask1 = {},
                                         const Tensor& mask2 = {});

    std::string id() const override { return "alternating_co_attention"; }
    Taxonomy taxonomy() const override;

    AdditiveScore score1;  // A_1, over input 1 (steps 1 and 3): queries d2, keys d1
    AdditiveScore score2;  // A_2, over input 2 (step 2): queries d1, keys d2
};

// ---- 4. interactive_co_attention --------------------------------------------------------------
// Ma, Li, Zhang, Wang (2017), Interactive Attention Networks for Aspect-Level
// Sentiment Classification, IJCAI (IAN).
//   k̄^(i) = (1/n_i) Σ_l k^(i)_l                       the mean over the unmasked rows
//   e^(1)_l = score_12(k̄^(2), k^(1)_l),  e^(2)_l = score_21(k̄^(1), k^(2)_l)
//   a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l k^(i)_l
// Any score fits (the survey allows it); IAN's, the default, is the activated
// general score tanh(k_lᵀ W k̄ + b): W_12 d1×d2 and W_21 d2×d1, scalars b_12, b_21.
class InteractiveCoAttention : public AttentionModule {
public:
    // IAN's scores.
    InteractiveCoAttention(int64_t dim1, int64_t dim2, Generator& gen);
    // Any scores: score_12 takes queries of width d2 and keys of width d1, score_21 the reverse.
    InteractiveCoAttention(std::unique_ptr<ScoreFunction> score_12, std::unique_ptr<ScoreFunction> score_21);

    CoAttentionOutput forward(const Var& features1, const Var& features2, const Tensor& mask1 = {},
                              const Tensor& mask2 = {});

    ScoreFunction& score_12() { return *score_12_; }
    ScoreFunction& score_21() { return *score_21_; }
    std::string id() const override { return "interactive_co_attention"; }
    Taxonomy taxonomy() const override;

private:
    std::unique_ptr<ScoreFunction> score_12_;  // attends over input 1
    std::unique_ptr<ScoreFunction> score_21_;  // attends over input 2
};

// ---- the affinity matrix: how every row of input 1 relates to every row of input 2 ----------
// K1 B×n1×d1, K2 B×n2×d2 → A B×n1×n2. The override point of entry 5.
class AffinityFunction : public Module {
public:
    virtual std::string id() const = 0;
    virtual Var affinity(const Var& keys1, const Var& keys2) = 0;
    std::string describe() const override { return id(); }
};

// The bilinear affinity of Lu et al.: A = K1 W_A K2ᵀ, W_A d1×d2 (entry 5's first form).
class BilinearAffinity : public AffinityFunction {
public:
    BilinearAffinity(int64_t dim1, int64_t dim2, Generator& gen);
    Var affinity(const Var& keys1, const Var& keys2) override;
    std::string id() const override { return "bilinear_affinity"; }

    Var W_A;
};

// ---- 6. trilinear_affinity -----------------------------------------------------------------
// Seo, Kembhavi, Farhadi, Hajishirzi (2017), Bidirectional Attention Flow for
// Machine Comprehension, ICLR (the second way to build the affinity matrix).
//   A_ij = w_Aᵀ [k1_i; k2_j; k1_i ∘ k2_j]                        the paper's form
//        = (K1 u)_i + (K2 v)_j + (K1 diag(z) K2ᵀ)_ij              vectorised, w_A = [u; v; z]
// w_A 3d; both inputs need the same width d. affinity() computes the
// vectorised form (O(n1·n2·d) in one matmul); concatenated() builds the
// n1×n2×3d tensor of the paper's form, to read and to test against.
class TrilinearAffinity : public AffinityFunction {
public:
    TrilinearAffinity(int64_t dim, Generator& gen);
    Var affinity(const Var& keys1, const Var& keys2) override;
    Var concatenated(const Var& keys1, const Var& keys2);
    std::string id() const override { return "trilinear_affinity"; }

    Var w_A;  // [u; v; z]  3d
};

// ---- 5. parallel_co_attention ----------------------------------------------------------------
// Lu et al. (2016), as entry 3; in row layout (the survey's column layout transposed):
//   A   = act(K1 W_A K2ᵀ)                       B×n1×n2   (or act(trilinear), entry 6)
//   H_1 = act(K1 W_1ᵀ + A (K2 W_2ᵀ))            B×n1×d_w
//   H_2 = act(K2 W_2ᵀ + Aᵀ (K1 W_1ᵀ))           B×n2×d_w
//   e^(i) = H_i w_i,  a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l f^(i)_l     act = tanh
// W_1 d_w×d1, W_2 d_w×d2, w_1, w_2 d_w. Padded rows and columns of A are
// zeroed, so padding never reaches the other input's hidden layer.
class ParallelCoAttention : public AttentionModule {
public:
    // The bilinear affinity (Lu et al.).
    ParallelCoAttention(int64_t dim1, int64_t dim2, int64_t attention_dim, Generator& gen);
    // Any affinity, e.g. TrilinearAffinity (then d1 = d2).
    ParallelCoAttention(std::unique_ptr<AffinityFunction> affinity, int64_t dim1, int64_t dim2,
                        int64_t attention_dim, Generator& gen);

    CoAttentionOutput forward(const Var& features1, const Var& features2, const Tensor& mask1 = {},
                              const Tensor& mask2 = {});

    AffinityFunction& affinity() { return *affinity_; }
    std::string id() const override { return "parallel_co_attention"; }
    Taxonomy taxonomy() const override;

    Var W_1, W_2, w_1, w_2;

private:
    std::unique_ptr<AffinityFunction> affinity_;
};

// ---- 7. max_affinity_co_attention --------------------------------------------------------------
// Seo et al. (2017), BiDAF's query-to-context attention b = softmax(max_col S).
//   e^(1)_i = max_j A_ij,   e^(2)_j = max_i A_ij      (masked entries are −∞ before the max)
//   a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l v^(i)_l
// No parameters beyond the affinity. The gradient reaches A only at the
// arg-max of each row (column), ties going to the lowest index.
// A B×n1×n2, V1 B×n1×d_v, V2 B×n2×d_v' → contexts, weights; output [c^(1); c^(2)].
CoAttentionOutput max_affinity_co_attention(const Var& affinity, const Var& values1, const Var& values2,
                                            const Tensor& mask1 = {}, const Tensor& mask2 = {});

// ---- 8. multi_grained_co_attention -------------------------------------------------------------
// Fan, Feng, Zhao (2018), Multi-grained Attention Network for Aspect-Level
// Sentiment Classification, EMNLP (MGAN). Context H B×n×d, aspect T B×n_t×d:
//   coarse C-A2C  m_ca = Σ_i softmax_i(h_iᵀ W_ca t̄) h_i          entry 4 with bilinear scores
//   coarse C-C2A  m_cc = Σ_j softmax_j(t_jᵀ W_cc h̄) t_j
//   fine          U = trilinear(H, T)                               entry 6, B×n×n_t
//   fine F-A2C    m_fa = Σ_i softmax_i(max_j U_ij) h_i              entry 7's first context
//   fine F-C2A    q_i = Σ_j softmax_j(U_ij) t_j,  m_fc = (1/n) Σ_i q_i
//   output [m_ca; m_cc; m_fa; m_fc]                                 B×4d
// W_ca, W_cc d×d; w_U 3d. (MGAN's aspect-alignment loss is out of scope.)
struct MultiGrainedCoAttentionOutput {
    Var output;                // [m_ca; m_cc; m_fa; m_fc]  B×4d
    Var coarse_context;        // softmax weights of C-A2C over the context  B×n
    Var coarse_aspect;         // of C-C2A over the aspect                     B×n_t
    Var fine_context;          // of F-A2C over the context                    B×n
    Var fine_aspect;           // of F-C2A: each context word over the aspect  B×n×n_t
    Var affinity;              // U                                            B×n×n_t
};

class MultiGrainedCoAttention : public AttentionModule {
public:
    MultiGrainedCoAttention(int64_t dim, Generator& gen);

    MultiGrainedCoAttentionOutput forward(const Var& context, const Var& aspect, const Tensor& context_mask = {},
                                          const Tensor& aspect_mask = {});

    InteractiveCoAttention& coarse() { return *coarse_; }
    TrilinearAffinity& fine() { return *fine_; }
    std::string id() const override { return "multi_grained_co_attention"; }
    Taxonomy taxonomy() const override;

private:
    // general scores W_ca ("coarse.score_12.W") and W_cc ("coarse.score_21.W")
    std::unique_ptr<InteractiveCoAttention> coarse_;
    std::unique_ptr<TrilinearAffinity> fine_;  // w_U ("fine.w_A")
};

// ---- 9. rotatory_attention -------------------------------------------------------------------
// Zheng & Xia (2018), Left-Center-Right Separated Neural Network for
// Aspect-based Sentiment Analysis with Rotatory Attention, arXiv 1802.00892
// (LCR-Rot); the hops of Wallaart & Frasincar (2019), ESWC (LCR-Rot-hop).
//   r^t = (1/n_t) Σ_i f^t_i                       the target's mean
//   r^l = Attn_l(r^t; F^l),     r^r = Attn_r(r^t; F^r)          target → contexts
//   r^lt = Attn_tl(r^l; F^t),   r^rt = Attn_tr(r^r; F^t)        contexts → target
//   output r = [r^l; r^r; r^lt; r^rt]             B×(d_l + d_r + 2 d_t)
// Attn(q; F) = Σ_i softmax_i(tanh(f_iᵀ W q + b)) f_i, the activated general
// score, one (W, b) per arrow. With hops > 1 the four attentions repeat, r^lt
// and r^rt replacing r^t as the queries of the left and right contexts; the
// hops share the four scores.
struct RotatoryAttentionOutput {
    Var output;        // [r^l; r^r; r^lt; r^rt]  B×(d_l + d_r + 2 d_t)
    Var left, right;   // r^l B×d_l, r^r B×d_r
    Var target_left;   // r^lt B×d_t
    Var target_right;  // r^rt B×d_t
    Var weights_left, weights_right;                // B×n_l, B×n_r (the last hop)
    Var weights_target_left, weights_target_right;  // B×n_t each
};

class RotatoryAttention : public AttentionModule {
public:
    RotatoryAttention(int64_t left_dim, int64_t target_dim, int64_t right_dim, Generator& gen, int hops = 1);

    // left B×n_l×d_l, target B×n_t×d_t, right B×n_r×d_r, with their key masks.
    RotatoryAttentionOutput forward(const Var& left, const Var& target, const Var& right,
                                    const Tensor& left_mask = {}, const Tensor& target_mask = {},
                                    const Tensor& right_mask = {});

    int hops() const { return hops_; }
    std::string id() const override { return "rotatory_attention"; }
    Taxonomy taxonomy() const override;

    ActivatedGeneralScore score_left;          // q r^t (d_t), keys F^l (d_l)
    ActivatedGeneralScore score_right;         // q r^t (d_t), keys F^r (d_r)
    ActivatedGeneralScore score_target_left;   // q r^l (d_l), keys F^t (d_t)
    ActivatedGeneralScore score_target_right;  // q r^r (d_r), keys F^t (d_t)

private:
    int hops_;
};

}  // namespace attn
