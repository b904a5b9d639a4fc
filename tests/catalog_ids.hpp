// The 80 ids of the attention catalog (docs/ATTENTION_CATALOG.md), in its
// order: kCatalogIds[k − 1] is entry k. The registry test requires an entry for
// each, and the docs index test a row for each; entries added in coursework
// take numbers after 80 and need no change here.
#pragma once

#include <array>
#include <string_view>

namespace attn::testing {

inline constexpr std::array<std::string_view, 80> kCatalogIds = {
    "general_attention",  // 1
    "singular_features_attention",  // 2
    "alternating_co_attention",  // 3
    "interactive_co_attention",  // 4
    "parallel_co_attention",  // 5
    "trilinear_affinity",  // 6
    "max_affinity_co_attention",  // 7
    "multi_grained_co_attention",  // 8
    "rotatory_attention",  // 9
    "single_level_attention",  // 10
    "attention_via_attention",  // 11
    "hierarchical_attention",  // 12
    "single_representational_attention",  // 13
    "meta_embedding_attention",  // 14
    "additive_score",  // 15
    "dot_score",  // 16
    "scaled_dot_score",  // 17
    "general_score",  // 18
    "biased_general_score",  // 19
    "activated_general_score",  // 20
    "similarity_score",  // 21
    "soft_alignment",  // 22
    "hard_alignment",  // 23
    "local_monotonic_alignment",  // 24
    "local_predictive_alignment",  // 25
    "reinforced_alignment",  // 26
    "gumbel_softmax_alignment",  // 27
    "elementwise_alignment",  // 28
    "single_dimensional_attention",  // 29
    "multi_dimensional_attention",  // 30
    "bahdanau_attention",  // 31
    "luong_attention",  // 32
    "specialized_query_attention",  // 33
    "attention_over_attention",  // 34
    "constant_query_self_attention",  // 35
    "learned_query_self_attention",  // 36
    "qkv_self_attention",  // 37
    "plain_self_attention",  // 38
    "singular_query_attention",  // 39
    "multi_head_attention",  // 40
    "narrow_wide_multi_head_attention",  // 41
    "multi_hop_attention",  // 42
    "capsule_attention",  // 43
    "scaled_dot_product_attention",  // 44
    "restricted_self_attention",  // 45
    "sinusoidal_position_encoding",  // 46
    "learned_position_embedding",  // 47
    "relative_position_self_attention",  // 48
    "head_gated_multi_head_attention",  // 49
    "random_synthesizer_attention",  // 50
    "nadaraya_watson_pooling",  // 51
    "parametric_nadaraya_watson_pooling",  // 52
    "doubly_stochastic_soft_attention",  // 53
    "pointer_attention",  // 54
    "feed_forward_attention",  // 55
    "structured_self_attention",  // 56
    "latent_attention",  // 57
    "neural_transducer_attention",  // 58
    "area_attention",  // 59
    "dual_local_global_attention",  // 60
    "squeeze_excitation",  // 61
    "cbam_channel_attention",  // 62
    "cbam_spatial_attention",  // 63
    "danet_position_attention",  // 64
    "danet_channel_attention",  // 65
    "pyramid_aggregation_attention",  // 66
    "abcnn1_attention",  // 67
    "abcnn2_attention",  // 68
    "abcnn3_attention",  // 69
    "decomposable_attention",  // 70
    "compositional_de_attention",  // 71
    "cosnet_co_attention",  // 72
    "can_cross_attention",  // 73
    "sum_mean_max_pooling",  // 74
    "k_max_pooling",  // 75
    "chunk_max_pooling",  // 76
    "stochastic_pooling",  // 77
    "spatial_pyramid_pooling",  // 78
    "deep_sets_pooling",  // 79
    "gru_gating",  // 80
};

}  // namespace attn::testing
