// Pointer attention (catalog entry 54): attention whose weights are the
// output. A Pointer Network answers with a position of its input, so its
// "vocabulary" grows with the input and it can sort, or pick a convex hull,
// for any n.
//
// Vinyals, Fortunato, Jaitly (2015), Pointer Networks, NeurIPS.
//
//     u^i_j = vᵀ tanh(W_1 e_j + W_2 d_i)        the additive score (entry 15) without bias
//     p(C_i = j | C_1..C_{i−1}, P) = softmax_j(u^i_j)
//
// Unlike entry 31, the softmax is not used to blend the e_j into a context:
// the distribution over the n input positions is itself the prediction.
//
// Shapes (row = position, batch first):
//   encoder states E B×n×d_e · decoder states D B×m×d_d (m decoding steps at once)
//   mask: B×n (positions that may be chosen) or B×m×n (e.g. "not chosen yet"
//   per step), 1 = may be pointed at
//   → pointer distribution p B×m×n (each row sums to 1), scores u B×m×n
//
// docs/attention/pointer.md; tests in tests/grad/test_pointer.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 54. pointer_attention ---------------------------------------------------------
// The score is the additive score of entry 15 without a bias, `score`, with the
// decoder state as its query and the encoder states as its keys:
//   u^i_j = wᵀ tanh(W_1 d_i + W_2 e_j)
// score.W_1 d_w×d_d, score.W_2 d_w×d_e, score.w d_w — the paper's W_2, W_1 and
// v (Vinyals et al. name the encoder's matrix first; entry 15 names the query's).
// W_2 e_j does not depend on the step: project() computes it once per input,
// scores() once per step.
class PointerAttention : public AttentionModule {
public:
    PointerAttention(int64_t encoder_dim, int64_t decoder_dim, int64_t attention_dim, Generator& gen);

    // E B×n×d_e → W_2 e_j for every j, B×n×d_w
    Var project(const Var& encoder_states);
    // u^i_j = wᵀ tanh(W_1 d_i + W_2 e_j): decoder states B×m×d_d, projected
    // encoder states B×n×d_w → B×m×n
    Var scores(const Var& decoder_states, const Var& projected);
    // The pointer distribution: output and weights are the same B×m×n tensor,
    // p = softmax_j(u^i) over the positions the mask keeps.
    AttentionOutput forward(const Var& encoder_states, const Var& decoder_states, const Tensor& mask = {});

    std::string id() const override { return "pointer_attention"; }
    Taxonomy taxonomy() const override;

    AdditiveScore score;  // queries d_d, keys d_e, width d_w, no bias
};

// The keep mask "positions not chosen before step i", for teacher forcing a
// pointer decoder that must output a permutation: targets B×m (the index
// chosen at each step, as reals) → B×m×n, row i keeps every j not in
// targets[0..i−1].
Tensor not_yet_chosen_mask(const Tensor& targets, int64_t n);

}  // namespace attn
