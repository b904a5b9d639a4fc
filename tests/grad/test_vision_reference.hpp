// The independent references of catalog entries 61–66 (CNN / vision
// attention), written in test_vision_reference.cpp with only
// tests/grad/reference.hpp; their registry entries are in test_vision.cpp.
// Each reads the feature map r.x[0] (B×C×H×W) and the module's parameters r.p
// by name, and gives the outputs by name.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/grad/catalog.hpp"

namespace attn::testing {

// Each checks that the parameters have the catalog's shapes for the sizes given
// (a reduction r gives max(1, C/r) hidden channels), and throws if not.

// 61. parameters fc1 (C/r)×C, fc2 C×(C/r) (.weight, and .bias when `bias`)
//     → output, weights (gates B×C)
std::vector<Expected> squeeze_excitation_reference(const Ref& r, int64_t reduction, bool bias);
// 62. the same parameters; use_max = false drops the max branch → output, weights (B×C)
std::vector<Expected> cbam_channel_attention_reference(const Ref& r, int64_t reduction, bool bias, bool use_max);
// 63. parameters conv.weight (1×2×k×k), conv.bias → output, weights (B×1×H×W)
std::vector<Expected> cbam_spatial_attention_reference(const Ref& r, int64_t kernel, bool bias);
// The full CBAM block: parameters channel.fc1, channel.fc2, spatial.conv
//   → output, channel_gates, spatial_map
std::vector<Expected> cbam_block_reference(const Ref& r, int64_t reduction, int64_t kernel);

// 64. parameters query, key (C/r)×C×1×1, value C×C×1×1 (with biases), alpha
//     → output, weights (S B×N×N)
std::vector<Expected> danet_position_attention_reference(const Ref& r, int64_t reduction);
// 65. parameter beta; the released code's energy when released_code → output, weights (X B×C×C)
std::vector<Expected> danet_channel_attention_reference(const Ref& r, bool released_code);

// 66. parameters reduce<k> hidden×C×1×1, score<k> 1×hidden×1×1 for k < cascade
//     → output, weights (𝒜 B×H×W)
std::vector<Expected> pyramid_aggregation_attention_reference(const Ref& r, int cascade, int64_t hidden,
                                                              const std::vector<int64_t>& levels, bool concatenate);
// The aggregation alone: U B×C×H×W and a map B×H×W → B×C or B×(C·Σ b²)
Array pyramid_aggregate_reference(const Array& U, const Array& map, const std::vector<int64_t>& levels,
                                  bool concatenate);

}  // namespace attn::testing
