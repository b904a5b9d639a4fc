// Attention inside convolutional networks (catalog entries 61–66): gates over
// channels, maps over pixels, and self-attention over positions or channels
// of a feature map.
//
//   61 squeeze_excitation              Hu+ 2018     a sigmoid gate per channel from its mean
//   62 cbam_channel_attention          Woo+ 2018    the same gate from mean and max, one MLP
//   63 cbam_spatial_attention          Woo+ 2018    a sigmoid gate per pixel from a 7×7 conv
//   64 danet_position_attention        Fu+ 2019     self-attention over the N = H·W pixels
//   65 danet_channel_attention         Fu+ 2019     self-attention over the C channels
//   66 pyramid_aggregation_attention   Zhu+ 2018    an attention map weights pyramid sum pooling
//
// Shapes (images are channel-first, batch first, as PyTorch):
//   U, F, A  B×C×H×W feature maps · N = H·W positions, row p = h·W + w
// Each mechanism returns an AttentionOutput whose `weights` are its gates or
// its map; the shape of each is stated at the entry. Feature maps have no
// padding, so these mechanisms take no mask.
//
// docs/attention/vision.md; tests in tests/grad/test_vision.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "nn/conv.hpp"
#include "nn/linear.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 61. squeeze_excitation ---------------------------------------------------------------
// Hu, Shen, Sun (2018), Squeeze-and-Excitation Networks, CVPR.
//   z_c = (1/HW) Σ_{i,j} U_c(i, j)          squeeze: one number per channel
//   s   = σ(W_2 ReLU(W_1 z))                excitation: a gate per channel
//   X̃_c = s_c U_c
// W_1 (C/r)×C, W_2 C×(C/r) (as Linear layers "fc1", "fc2"; biases optional,
// the paper's notation leaves them out). U B×C×H×W → output B×C×H×W, weights
// (the gates s) B×C.
class SqueezeExcitation : public AttentionModule {
public:
    SqueezeExcitation(int64_t channels, int64_t reduction, Generator& gen, bool with_bias = true);

    AttentionOutput forward(const Var& U);

    std::string id() const override { return "squeeze_excitation"; }
    Taxonomy taxonomy() const override;

    Linear fc1, fc2;
};

// ---- 62. cbam_channel_attention -----------------------------------------------------------
// Woo, Park, Lee, Kweon (2018), CBAM: Convolutional Block Attention Module, ECCV.
//   M_c(F) = σ(MLP(AvgPool(F)) + MLP(MaxPool(F))),   MLP(z) = W_1 ReLU(W_0 z)
//   F'     = M_c(F) ⊗ F                              (broadcast over H and W)
// One MLP serves both branches: W_0 (C/r)×C "fc1", W_1 C×(C/r) "fc2" (biases
// optional, as in the authors' code). use_max = false drops the max branch,
// which is entry 61's gate. F B×C×H×W → output B×C×H×W, weights M_c B×C.
class CbamChannelAttention : public AttentionModule {
public:
    CbamChannelAttention(int64_t channels, int64_t reduction, Generator& gen, bool with_bias = true,
                         bool use_max = true);

    AttentionOutput forward(const Var& F);

    std::string id() const override { return "cbam_channel_attention"; }
    Taxonomy taxonomy() const override;

    Linear fc1, fc2;

private:
    bool use_max_;
};

// ---- 63. cbam_spatial_attention -----------------------------------------------------------
// Woo et al. (2018).
//   M_s(F') = σ(conv_{k×k}([AvgPool_c(F'); MaxPool_c(F')]))    pooled across channels
//   F''     = M_s(F') ⊗ F'                                      (broadcast over C)
// A conv 2→1 with a k×k kernel (k = 7 in the paper) and padding ⌊k/2⌋, so H and
// W are kept. F' B×C×H×W → output B×C×H×W, weights M_s B×1×H×W.
class CbamSpatialAttention : public AttentionModule {
public:
    explicit CbamSpatialAttention(Generator& gen, int kernel_size = 7, bool with_bias = true);

    AttentionOutput forward(const Var& F);

    std::string id() const override { return "cbam_spatial_attention"; }
    Taxonomy taxonomy() const override;

    Conv2d conv;  // weight 1×2×k×k
};

// The full CBAM block: entry 62, then entry 63 on its output.
struct CbamOutput {
    Var output;         // B×C×H×W
    Var channel_gates;  // B×C
    Var spatial_map;    // B×1×H×W
};
class Cbam : public Module {
public:
    Cbam(int64_t channels, int64_t reduction, Generator& gen, int kernel_size = 7);
    CbamOutput forward(const Var& F);
    std::string describe() const override { return "cbam"; }

    CbamChannelAttention channel;
    CbamSpatialAttention spatial;
};

// ---- 64. danet_position_attention ---------------------------------------------------------
// Fu, Liu, Tian, Li, Bao, Fang, Lu (2019), Dual Attention Network for Scene
// Segmentation, CVPR: the position attention module (PAM).
//   B, C = conv_1×1(A) ∈ R^{C/8×H×W},  D = conv_1×1(A) ∈ R^{C×H×W}, flattened to N rows
//   S_ji = exp(B_i·C_j) / Σ_i exp(B_i·C_j)          position j attends to position i
//   E_j  = α Σ_i S_ji D_i + A_j                      α a scalar, initialised to 0
// Convs "query" (C_j, the attending side), "key" (B_i) and "value" (D); the
// paper's B and C play symmetric roles. A B×C×H×W → output B×C×H×W, weights
// S B×N×N (rows sum to 1). Memory is O(N²): keep feature maps small.
class DanetPositionAttention : public AttentionModule {
public:
    DanetPositionAttention(int64_t channels, Generator& gen, int64_t reduction = 8);

    AttentionOutput forward(const Var& A);

    std::string id() const override { return "danet_position_attention"; }
    Taxonomy taxonomy() const override;

    Conv2d query, key, value;
    Var alpha;  // shape 1
};

// ---- 65. danet_channel_attention ----------------------------------------------------------
// Fu et al. (2019): the channel attention module (CAM). No projections.
//   X_ji = exp(A_i·A_j) / Σ_i exp(A_i·A_j)          channel j attends to channel i (C×C)
//   E_j  = β Σ_i X_ji A_i + A_j                      β a scalar, initialised to 0
// The released DANet code feeds the softmax with max_i(A_i·A_j) − A_i·A_j
// instead, which reverses the preference (the most similar channel gets the
// least weight): EnergyMode::released_code reproduces it. A B×C×H×W → output
// B×C×H×W, weights X B×C×C (rows sum to 1).
class DanetChannelAttention : public AttentionModule {
public:
    enum class EnergyMode { paper, released_code };
    explicit DanetChannelAttention(EnergyMode mode = EnergyMode::paper);

    AttentionOutput forward(const Var& A);

    std::string id() const override { return "danet_channel_attention"; }
    Taxonomy taxonomy() const override;

    Var beta;  // shape 1

private:
    EnergyMode mode_;
};

// ---- 66. pyramid_aggregation_attention ----------------------------------------------------
// Zhu, Wang, Xie, Zheng (2018), Attention-based Pyramid Aggregation Network for
// Visual Place Recognition, ACM MM (APANet). The catalog's concrete version
// (the paper's exact block and cascade are unverified; docs/attention/vision.md):
//   𝒜_1 = σ(conv_1×1(ReLU(conv_1×1(U))))                    attention map H×W
//   𝒜_k = 𝒜_{k−1} ⊙ σ(conv_1×1(ReLU(conv_1×1(𝒜_{k−1} ⊙ U))))  each block refines the last
//   f_R = Σ_{(i,j)∈R} 𝒜(i, j) U_{:,i,j},  f_R ← f_R / ‖f_R‖   each region R of each level
//   f   = Σ_{ℓ,R} f_R (or [f_R]_{ℓ,R}),   f ← f / ‖f‖
// Level ℓ splits the map into b_ℓ×b_ℓ regions with entry 78's bins.
enum class PyramidAggregate { sum, concat };

// The aggregation alone, for a given map: U B×C×H×W, map B×H×W → B×C (sum) or
// B×(C·Σ b_ℓ²) (concat, level by level, channel-major within a level).
Var pyramid_aggregation(const Var& U, const Var& attention_map, const std::vector<int64_t>& levels,
                        PyramidAggregate aggregate = PyramidAggregate::sum);

// U B×C×H×W → output B×C or B×(C·Σ b_ℓ²), weights 𝒜 B×H×W.
class PyramidAggregationAttention : public AttentionModule {
public:
    PyramidAggregationAttention(int64_t channels, int64_t hidden, Generator& gen,
                                std::vector<int64_t> levels = {1, 2, 3}, int64_t cascade = 1,
                                PyramidAggregate aggregate = PyramidAggregate::sum);

    AttentionOutput forward(const Var& U);

    std::string id() const override { return "pyramid_aggregation_attention"; }
    Taxonomy taxonomy() const override;

    std::vector<int64_t> levels;
    std::vector<std::unique_ptr<Conv2d>> reduce, score;  // per cascade block: C→hidden, hidden→1

private:
    PyramidAggregate aggregate_;
};

// L2 normalisation along one axis: x / ‖x‖, with l2_norm of general.hpp (a zero vector stays 0).
Var l2_normalize(const Var& x, int axis);

}  // namespace attn
