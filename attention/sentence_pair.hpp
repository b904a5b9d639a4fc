// Sentence-pair and paired-input attention (catalog entries 67–73): two
// inputs attend to each other, and what one finds in the other changes how it
// is represented.
//
//   67 abcnn1_attention            Yin+ 2016   match scores → attention feature maps on the conv input
//   68 abcnn2_attention            Yin+ 2016   match scores → weights for pooling the conv output
//   69 abcnn3_attention            Yin+ 2016   both, in every layer
//   70 decomposable_attention      Parikh+ 2016  attend, compare, aggregate (NLI)
//   71 compositional_de_attention  Tay+ 2019   quasi-attention: add, subtract or nullify (CoDA)
//   72 cosnet_co_attention         Lu+ 2019    co-attention between two video frames (COSNet)
//   73 can_cross_attention         Hou+ 2019   cross attention of a class and a query feature map (CAN)
//
// Shapes (row = position, batch first):
//   sentences F_0 B×s_0×d, F_1 B×s_1×d (ABCNN: both padded to the fixed s)
//   a B×ℓ_a×d, b B×ℓ_b×d · feature maps B×C×H×W (N = H·W positions)
//   masks: B×s key masks (1 = real token); padding gets zero weight
//
// docs/attention/sentence_pair.md; tests in tests/grad/test_sentence_pair.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "attention/general.hpp"
#include "nn/conv.hpp"
#include "nn/linear.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- ABCNN: Yin, Schütze, Xiang, Zhou (2016), ABCNN: Attention-Based
// Convolutional Neural Network for Modeling Sentence Pairs, TACL. ------------------------
//
// The match score of unit i of sentence 0 and unit j of sentence 1:
//   A_ij = 1 / (1 + ‖F_0[i] − F_1[j]‖₂)          ∈ (0, 1], 1 exactly for equal rows
// F_0 B×s_0×d, F_1 B×s_1×d, masks B×s_0, B×s_1 (undefined: keep all) → A B×s_0×s_1,
// zero where either unit is padding. ‖·‖ is computed as √(Σ (·)² + 10⁻¹²), so
// equal rows (the same word twice) have a finite gradient.
Var abcnn_match_scores(const Var& F0, const Var& F1, const Tensor& mask0 = {}, const Tensor& mask1 = {});

// ---- 67. abcnn1_attention ------------------------------------------------------------------
//   F_{0,a} = A W_0,   F_{1,a} = Aᵀ W_1         attention feature maps, s×d each
// and the convolution's input for sentence k is the two-channel stack [F_k; F_{k,a}],
// with the rows of padding zero (the paper's zero-padded sentences).
// W_0, W_1 s×d (the paper's d×s matrices, transposed for rows = positions).
class AbcnnOneAttention : public AttentionModule {
public:
    AbcnnOneAttention(int64_t max_length, int64_t dim, Generator& gen);

    struct Output {
        Var features0, features1;  // F_{0,a}, F_{1,a}    B×s×d
        Var channels0, channels1;  // [F_k; F_{k,a}]      B×2×s×d, for a Conv2d
        Var weights;               // A                   B×s×s
    };
    // F_0, F_1 B×s×d, masks B×s
    Output forward(const Var& F0, const Var& F1, const Tensor& mask0 = {}, const Tensor& mask1 = {});

    std::string id() const override { return "abcnn1_attention"; }
    Taxonomy taxonomy() const override;

    Var W_0, W_1;
};

// ---- 68. abcnn2_attention ------------------------------------------------------------------
// On the wide-convolution outputs F^c_k B×(s_k+w−1)×d′:
//   a_{0,j} = Σ_r A_jr,  a_{1,j} = Σ_r A_rj        row and column sums of A
//   F^p_k[j] = Σ_{r=j}^{j+w−1} a_{k,r} F^c_k[r]     j = 1..s_k  (attention-weighted w-ap)
// masks B×(s_k+w−1) mark the real conv outputs (a sentence of ℓ tokens has ℓ+w−1).
struct AbcnnPooled {
    Var pooled0, pooled1;    // F^p_0 B×s_0×d′, F^p_1 B×s_1×d′
    Var weights;             // A   B×(s_0+w−1)×(s_1+w−1)
    Var unit0, unit1;        // a_0, a_1: each unit's attention weight
};
AbcnnPooled abcnn2_attention(const Var& conv0, const Var& conv1, int64_t width, const Tensor& mask0 = {},
                             const Tensor& mask1 = {});

// Σ_{r=j}^{j+w−1} a_r F^c[r]: conv B×(s+w−1)×d′, unit weights B×(s+w−1) → B×s×d′.
Var attention_weighted_pool(const Var& conv, const Var& unit_weights, int64_t width);
// Plain width-w average pooling (the w-ap of ABCNN-1 and of the BCNN baseline):
// B×(s+w−1)×d′ → B×s×d′.
Var window_average_pool(const Var& conv, int64_t width);
// The wide convolution of ABCNN: a conv of w×d filters over a C-channel s×d
// "image", zero-padded by w−1 on both ends, then tanh: B×C×s×d → B×(s+w−1)×d′.
Var wide_convolution(Conv2d& conv, const Var& channels);

// ---- 69. abcnn3_attention (and the layers of ABCNN-1 and ABCNN-2) ---------------------------
// One ABCNN layer: [ABCNN-1 attention channels] → wide conv (width w, d′
// filters) + tanh → [ABCNN-2 attention pooling, else w-ap]. kind selects
// which attentions the layer uses; ABCNN-3 uses both. Masks are the token
// masks B×s; the conv outputs' masks follow (ℓ tokens → ℓ+w−1 outputs).
class AbcnnLayer : public AttentionModule {
public:
    enum class Kind { one, two, three };
    AbcnnLayer(Kind kind, int64_t max_length, int64_t dim, int64_t out_dim, int64_t width, Generator& gen);

    struct Output {
        Var out0, out1;          // B×s×d′, ready for the next layer or all-ap
        Var input_attention;     // ABCNN-1's A  B×s×s (undefined for kind two)
        Var pooling_attention;   // ABCNN-2's A  B×(s+w−1)×(s+w−1) (undefined for kind one)
    };
    Output forward(const Var& F0, const Var& F1, const Tensor& mask0 = {}, const Tensor& mask1 = {});

    std::string id() const override;
    Taxonomy taxonomy() const override;

    std::unique_ptr<AbcnnOneAttention> input_attention;  // kinds one and three
    Conv2d conv;

private:
    Kind kind_;
    int64_t width_;
};

// The conv-output mask of a token mask: ℓ tokens → ℓ + w − 1 real outputs.
// B×s → B×(s+w−1). The padding is at the end (ℓ = the number of kept tokens).
Tensor wide_conv_mask(const Tensor& token_mask, int64_t width);

// ---- 70. decomposable_attention -----------------------------------------------------------------
// Parikh, Täckström, Das, Uszkoreit (2016), A Decomposable Attention Model for
// Natural Language Inference, EMNLP.
//   attend     e_ij = F(ā_i)ᵀ F(b̄_j);  β_i = Σ_j softmax_j(e_ij) b̄_j;  α_j = Σ_i softmax_i(e_ij) ā_i
//   compare    v_{1,i} = G([ā_i; β_i]),  v_{2,j} = G([b̄_j; α_j])
//   aggregate  v_1 = Σ_i v_{1,i},  v_2 = Σ_j v_{2,j},  ŷ = H([v_1; v_2])
//   intra (optional)  f_ij = F_in(a_i)ᵀ F_in(a_j);  a′_i = Σ_j softmax_j(f_ij + d_{i−j}) a_j;  ā_i = [a_i; a′_i]
// F, G, F_in: two ReLU layers; H: two ReLU layers, then a linear output layer.
// d: one learned bias per offset i − j in −10..10, and one more shared by every
// distance |i − j| > 10 (the paper: "all distances greater than 10 words share
// the same bias"). A padding token attends to nothing and is attended by
// nothing: its rows and columns of both weight matrices are 0.
class DecomposableAttention : public AttentionModule {
public:
    DecomposableAttention(int64_t dim, int64_t hidden, int64_t classes, Generator& gen, bool intra = false);

    struct Output {
        Var logits;     // ŷ B×classes
        Var weights_a;  // softmax_j(e_ij): what each token of a attends to in b   B×ℓ_a×ℓ_b
        Var weights_b;  // softmax_i(e_ij): what each token of b attends to in a   B×ℓ_b×ℓ_a
    };
    // a B×ℓ_a×d, b B×ℓ_b×d, masks B×ℓ_a and B×ℓ_b
    Output forward(const Var& a, const Var& b, const Tensor& mask_a = {}, const Tensor& mask_b = {});
    // ā = [a; a′] with intra-sentence attention (a itself without it)   B×ℓ×d̄
    Var intra_attend(const Var& a, const Tensor& mask = {});

    std::string id() const override { return "decomposable_attention"; }
    Taxonomy taxonomy() const override;

    // The bucket of d_{i−j}: offsets −10..10 → 0..20, |i − j| > 10 → 21.
    static int64_t distance_bucket(int64_t offset);
    static constexpr int64_t kMaxDistance = 10, kDistanceBuckets = 2 * kMaxDistance + 2;

    Linear F1, F2, G1, G2, H1, H2, H3;
    std::unique_ptr<Linear> Fin1, Fin2;  // intra only
    Var distance_bias;                    // kDistanceBuckets biases, intra only

private:
    bool intra_;
};

// ---- 71. compositional_de_attention ----------------------------------------------------------------
// Tay, Luu, Zhang, Wang, Hui (2019), Compositional De-Attention Networks, NeurIPS.
//   E_ij = α F_E(a_i)ᵀ F_E(b_j)              pairwise affinity
//   N_ij = −β ‖F_N(a_i) − F_N(b_j)‖₁          distance dissimilarity, ≤ 0
//   M = tanh(E) ⊙ σ(N)                       ∈ (−1, 1): add, subtract or nullify
//   A′ = M B,  B′ = Mᵀ A
// No softmax: rows of M need not sum to 1 and may be negative. σ(N) ≤ ½
// because N ≤ 0 (no centring; see the doc page).
struct CodaOutput {
    Var aligned_a;  // A′ = M B   B×ℓ_a×d
    Var aligned_b;  // B′ = Mᵀ A  B×ℓ_b×d
    Var weights;    // M          B×ℓ_a×ℓ_b, zero where a or b is padding
};
// Identity F_E and F_N.
CodaOutput compositional_de_attention(const Var& A, const Var& B, real alpha = 1, real beta = 1,
                                      const Tensor& mask_a = {}, const Tensor& mask_b = {});

// With single dense layers F_E, F_N (d → d_p).
class CompositionalDeAttention : public AttentionModule {
public:
    CompositionalDeAttention(int64_t dim, int64_t projection_dim, Generator& gen, real alpha = 1, real beta = 1);

    CodaOutput forward(const Var& A, const Var& B, const Tensor& mask_a = {}, const Tensor& mask_b = {});

    std::string id() const override { return "compositional_de_attention"; }
    Taxonomy taxonomy() const override;

    Linear F_E, F_N;

private:
    real alpha_, beta_;
};

// ---- 72. cosnet_co_attention ----------------------------------------------------------------------
// Lu, Wang, Ma, Shen, Shao, Porikli (2019), See More, Know More: Unsupervised
// Video Object Segmentation with Co-Attention Siamese Networks, CVPR.
//   S = V_b W V_aᵀ                          N×N affinity of frame b's and frame a's positions
//   Z_a = (S^c)ᵀ V_b = softmax_row(Sᵀ) V_b   row j: frame b as seen from position j of frame a
//   Z_b = (S^r)ᵀ V_a = softmax_row(S) V_a
//   g = σ(Z w_f + b_f) ∈ (0, 1)^N,  Z ← g ⊙ Z   (row by row)
//   out_a = [Z_a; V_a], out_b = [Z_b; V_b]  along channels
// W: vanilla (any C×C), symmetric (Pᵀ D P, D diagonal) or channel-wise (D).
class CosnetCoAttention : public AttentionModule {
public:
    enum class Variant { vanilla, symmetric, channel };
    CosnetCoAttention(int64_t channels, Variant variant, Generator& gen);

    struct Output {
        Var out_a, out_b;          // B×2C×H×W
        Var affinity;              // S        B×N×N
        Var weights_a, weights_b;  // softmax_row(Sᵀ), softmax_row(S)   B×N×N
        Var gate_a, gate_b;        // g        B×N
    };
    // frames V_a, V_b B×C×H×W
    Output forward(const Var& Va, const Var& Vb);
    // The C×C matrix W of the variant.
    Var weight() const;

    std::string id() const override { return "cosnet_co_attention"; }
    Taxonomy taxonomy() const override;

    Var W, P, D, w_f, b_f;  // W: vanilla; P, D: symmetric; D: channel

private:
    Variant variant_;
};

// ---- 73. can_cross_attention ----------------------------------------------------------------------
// Hou, Chang, Ma, Shan, Chen (2019), Cross Attention Network for Few-shot
// Classification, NeurIPS (the cross attention module).
//   R^p = P̂ Q̂ᵀ  (rows L2-normalised: cosines)   m×m;   R^q = (R^p)ᵀ
//   w^p = W_2 ReLU(W_1 GAP(R^p)),  GAP(R^p) = (1/m) Σ_i R^p_{i,:}     the meta-fusion kernel
//   A^p_i = softmax_i(w^{p⊤} R^p_{i,:} / τ),  P̄ = P ⊙ (1 + A^p)        position by position
//   the same for Q with R^q and the same W_1, W_2
// W_1 (m/r)×m, W_2 m×(m/r), τ = 0.025 (m = h·w positions).
class CanCrossAttention : public AttentionModule {
public:
    CanCrossAttention(int64_t positions, int64_t reduction, Generator& gen, real temperature = real(0.025));

    struct Output {
        Var P_bar, Q_bar;        // B×c×h×w
        Var weights_p, weights_q;  // A^p, A^q   B×m
        Var correlation;         // R^p        B×m×m
    };
    // class feature P and query feature Q, B×c×h×w each
    Output forward(const Var& P, const Var& Q);

    std::string id() const override { return "can_cross_attention"; }
    Taxonomy taxonomy() const override;

    Var W_1, W_2;

private:
    real temperature_;
};

}  // namespace attn
