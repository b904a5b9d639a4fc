// The independent references of catalog entries 3–9 (co-attention and
// rotatory attention), written in test_co_attention_reference.cpp with only
// tests/grad/reference.hpp, and the properties their cases declare beyond
// catalog.hpp's; their registry entries are in test_co_attention.cpp.
// Each gives the module's outputs by name, read from the inputs r.x, the
// masks r.masks (absent = keep every row) and the parameters r.p.
#pragma once

#include <string>
#include <vector>

#include "tests/grad/catalog.hpp"

namespace attn::testing {

// 3. inputs F1, F2; parameters score1.{W_1, W_2, b, w}, score2.{...}
//    → output, context0, context1, context2, weights0, weights1, weights2
std::vector<Expected> alternating_co_attention_reference(const Ref& r);

// The score of each direction of entry 4 (parameters score_12.*, score_21.*).
enum class CoScore { activated_general, additive, biased_general, general };
// 4. inputs F1, F2 → output, context1, context2, weights1, weights2
std::vector<Expected> interactive_co_attention_reference(const Ref& r, CoScore score_12 = CoScore::activated_general,
                                                         CoScore score_21 = CoScore::activated_general);

// 5. inputs F1, F2; parameters W_1, W_2, w_1, w_2 and affinity.W_A (bilinear) or affinity.w_A (trilinear)
//    → output, context1, context2, weights1, weights2, affinity
std::vector<Expected> parallel_co_attention_reference(const Ref& r, bool trilinear_affinity);

// 6. inputs K1, K2; parameter w_A → affinity
std::vector<Expected> trilinear_affinity_reference(const Ref& r);

// 7. inputs A, V1, V2 → output, context1, context2, weights1, weights2
std::vector<Expected> max_affinity_co_attention_reference(const Ref& r);

// 8. inputs H, T; parameters coarse.score_12.W, coarse.score_21.W, fine.w_A
//    → m_ca, m_cc, m_fa, m_fc (the quarters of the output), coarse_context, coarse_aspect,
//      fine_context, fine_aspect, affinity
std::vector<Expected> multi_grained_co_attention_reference(const Ref& r);

// 9. inputs F^l, F^t, F^r; parameters score_left, score_right, score_target_left,
//    score_target_right (.W, .b) → output, left, right, target_left, target_right and
//    the last hop's weights_left, weights_right, weights_target_left, weights_target_right
std::vector<Expected> rotatory_attention_reference(const Ref& r, int hops);

// ---- properties ------------------------------------------------------------------------------
// Changing input `changed` changes `output`.
Property depends_on(int changed, std::string output);
// 3: with W_q^(1) = 0 (parameter score1.W_1), step 3 gives step 1's weights: weights1 = weights0.
Property zero_query_map_repeats_step_1();
// 7: reversing input 2 (the columns of A, the rows of V2 and mask2) leaves weights1 and context1 unchanged.
Property reordering_input_2_keeps_side_1();
// 7: changing A in a column masked by mask2 changes neither the output nor the weights.
Property masked_columns_of_A_change_nothing();

}  // namespace attn::testing
