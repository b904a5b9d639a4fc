// The independent references of the sentence-pair family, catalog entries
// 67–73 (tests/grad/test_sentence_pair_reference.cpp, each with its formula
// and shapes), and the properties its registry entries declare. Inputs in
// the cases' order: x[0] the first sentence or frame, x[1] the second; masks
// likewise (masks[0] over x[0], masks[1] over x[1]).
#pragma once

#include <string>
#include <vector>

#include "tests/grad/catalog.hpp"

namespace attn::testing::sentence_pair {

// ---- references ---------------------------------------------------------------------------
// 67, AbcnnOneAttention: weights (A), features0/1 (F_{k,a}), channels0/1 ([F_k; F_{k,a}]).
std::vector<Expected> abcnn1_attention_reference(const Ref& r);
// An ABCNN layer (AbcnnLayer): input_attention (with attention channels),
// pooling_attention (with attention pooling), out0, out1. The entries' own:
std::vector<Expected> abcnn_layer_reference(const Ref& r, bool attention_channels, bool attention_pooling);
std::vector<Expected> abcnn1_layer_reference(const Ref& r);  // 67: channels, w-ap
std::vector<Expected> abcnn2_layer_reference(const Ref& r);  // 68: attention pooling
std::vector<Expected> abcnn3_attention_reference(const Ref& r);  // 69: both
// 68, abcnn2_attention on conv outputs of width w: weights, unit0/1, pooled0/1.
std::vector<Expected> abcnn2_attention_reference(const Ref& r, int64_t w);
// 70: logits, weights_a, weights_b.
std::vector<Expected> decomposable_attention_reference(const Ref& r, bool intra);
// 71: aligned_a, aligned_b, weights; dense = F_E and F_N are Linear layers.
std::vector<Expected> compositional_de_attention_reference(const Ref& r, double alpha, double beta, bool dense);
// 72: out_a, out_b, affinity, weights_a, weights_b, gate_a, gate_b.
enum class CosnetW { vanilla, symmetric, channel };
std::vector<Expected> cosnet_co_attention_reference(const Ref& r, CosnetW variant);
// 73: P_bar, Q_bar, weights_p, weights_q, correlation.
std::vector<Expected> can_cross_attention_reference(const Ref& r, double tau);

// ---- properties ---------------------------------------------------------------------------
// Swapping the two inputs (and the two masks) transposes each of `weights` (last two axes).
Property swapping_transposes(std::vector<std::string> weights);
// Swapping the two inputs (and masks) swaps each pair of outputs.
Property swapping_swaps(std::vector<std::pair<std::string, std::string>> pairs);
// Given the same input twice (and the same mask), each pair of outputs is equal.
Property same_inputs_equal_outputs(std::vector<std::pair<std::string, std::string>> pairs);
// COSNet: each row of Z = out[:, :C] / g (g the gate) lies within the range,
// channel by channel, of the other frame's positions (a convex combination).
Property cosnet_convex(const std::string& out, const std::string& gate, int other_frame);

}  // namespace attn::testing::sentence_pair
