// More sequence attention variants (catalog entries 57, 58, 60), from seeds
// 003 and 004:
//
//   57 latent_attention             Chen+ 2016   two-stage weights: which words matter
//                                                 depends on which words are cues
//   58 neural_transducer_attention  Jaitly+ 2016 attention that reads only the current
//                                                 block of an input stream
//   60 dual_local_global_attention  Seo+ 2017    a sliding-window gate and a whole-document
//                                                 gate in front of a text CNN
//
// Shapes (row = position, batch first):
//   B batch · J, T, n positions · d width · W block size · m decoder steps
//   masks: B×J or B×T key masks (1 = real item)
//
// docs/attention/sequence_more.md; tests in tests/grad/test_sequence_more.cpp.
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

// ---- 57. latent_attention ------------------------------------------------------------------
// Chen, Liu, Shin, Song, Chen (2016), Latent Attention For If-Then Program
// Synthesis, NeurIPS.
//   l = softmax(D_1 u)               J         latent weights: which tokens are cues
//   A = softmax_col(D_2 V)           J×J       column j: where cue j says to look
//   w = A l                          J         the effective weights, Σ_i w_i = 1
//   o = D_3ᵀ w                       d         (the prediction softmax(P o) is the model's)
// u d, V d×J (J the fixed maximum length). D_1, D_2, D_3 are three encodings of
// the same tokens (the paper: embeddings or BiLSTM outputs).
class LatentAttention : public AttentionModule {
public:
    LatentAttention(int64_t dim, int64_t max_length, Generator& gen);

    struct Output {
        Var output;   // o  B×d
        Var latent;   // l  B×J
        Var active;   // A  B×J×J, each column a distribution over tokens i
        Var weights;  // w  B×J
    };
    // D_1, D_2, D_3 B×J×d, mask B×J → o, l, A, w
    Output forward(const Var& D1, const Var& D2, const Var& D3, const Tensor& mask = {});

    std::string id() const override { return "latent_attention"; }
    Taxonomy taxonomy() const override;

    Var u, V;
};

// ---- 58. neural_transducer_attention ----------------------------------------------------------
// Jaitly, Le, Vinyals, Sutskever, Sussillo, Bengio (2016), An Online
// Sequence-to-Sequence Model Using Partial Conditioning, NeurIPS.
//   block b holds frames (b−1)W+1 .. bW
//   e_{m,j} = f_att(s_m, h_{(b−1)W+j})    j = 1..W
//   α_m = softmax(e_m);  c_m = Σ_j α_{m,j} h_{(b−1)W+j}
// The decoder reads only the current block: the transducer can emit its
// outputs for block b before block b+1 has arrived. f_att is any score
// function (entries 15–21; the paper uses dot or MLP, or an LSTM over the
// score vectors). The last block, when T is not a multiple of W, is padded
// and its missing frames masked.
class NeuralTransducerAttention : public AttentionModule {
public:
    NeuralTransducerAttention(std::unique_ptr<ScoreFunction> score, int64_t block_size);

    // The number of blocks of a T-frame stream: ⌈T / W⌉.
    int64_t num_blocks(int64_t frames) const { return (frames + block_ - 1) / block_; }
    // The W frames of block `block` (0-based), zero-padded past the end     B×W×d
    Var block_frames(const Var& frames, int64_t block) const;
    // The keep mask of those frames (padding and the lengths mask)          B×W
    Tensor block_mask(const Var& frames, int64_t block, const Tensor& mask) const;
    // frames H B×T×d, decoder states s B×m×d_s (m steps that read the same
    // block), mask B×T → c B×m×d, α B×m×W (within the block)
    AttentionOutput forward(const Var& frames, int64_t block, const Var& decoder_states, const Tensor& mask = {});

    int64_t block_size() const { return block_; }
    ScoreFunction& score() { return *score_; }
    std::string id() const override { return "neural_transducer_attention"; }
    Taxonomy taxonomy() const override;

private:
    std::unique_ptr<ScoreFunction> score_;
    int64_t block_;
};

// ---- 60. dual_local_global_attention ------------------------------------------------------------
// Seo, Huang, Yang, Liu (2017), Interpretable Convolutional Neural Networks with
// Dual Local and Global Attention for Review Rating Prediction, RecSys (D-Attn).
//   local   s_i = σ(Σ_{k=−(w−1)/2}^{(w−1)/2} ⟨W_L[k], x_{i+k}⟩ + b_L)   zero padding, w = 5
//           x̂_i = s_i x_i;  conv width 1, tanh, max over time         → f_L
//   global  g = σ(⟨W_G, X⟩ + b_G)                                       one gate per document
//           X̂ = g X;  conv widths 2, 3, 4, tanh, max over time         → f_G (3 × filters)
//   z = FC([f_L; f_G])                                                  the user or item vector
// W_L w×d, W_G n×d (n the fixed document length). The rating is the dot product
// of a user's z and an item's z (the model's, not this module's).
class DualLocalGlobalAttention : public AttentionModule {
public:
    DualLocalGlobalAttention(int64_t length, int64_t dim, int64_t filters, int64_t out_dim, Generator& gen,
                             int64_t window = 5);

    struct Output {
        Var output;        // z  B×out_dim
        Var local_scores;  // s  B×n
        Var global_gate;   // g  B
    };
    // X B×n×d (padded to n; padding rows should be zero) → z, s, g
    Output forward(const Var& X);
    // s_i alone: X B×n×d → B×n
    Var local_scores(const Var& X);

    std::string id() const override { return "dual_local_global_attention"; }
    Taxonomy taxonomy() const override;

    Var W_L, b_L, W_G, b_G;
    Conv2d local_conv;                      // the width-1 convolution after the local gate
    Conv2d global_conv2, global_conv3, global_conv4;
    Linear fc;

private:
    int64_t length_, dim_, window_;
};

}  // namespace attn
