// Pointer attention (entry 54): the weights are the output.
// The formulas, the papers and the shape legend are in attention/pointer.hpp.
#include "attention/pointer.hpp"

#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "attention/scores.hpp"

namespace attn {

PointerAttention::PointerAttention(int64_t encoder_dim, int64_t decoder_dim, int64_t attention_dim, Generator& gen)
    : score(decoder_dim, encoder_dim, attention_dim, gen, Activation::tanh, /*bias=*/false) {
    register_module("score", score);
}

Var PointerAttention::project(const Var& encoder_states) {
    check_rank(id(), "encoder states", encoder_states, 3);
    if (encoder_states.size(2) != score.W_2.size(1))
        throw std::invalid_argument(id() + ": encoder states " + encoder_states.shape().str() + " need width " +
                                    std::to_string(score.W_2.size(1)));
    return score.project_keys(encoder_states);  // W_2 e_j    B×n×d_w
}

Var PointerAttention::scores(const Var& decoder_states, const Var& projected) {
    check_rank(id(), "decoder states", decoder_states, 3);
    if (decoder_states.size(2) != score.W_1.size(1) || decoder_states.size(0) != projected.size(0))
        throw std::invalid_argument(id() + ": decoder states " + decoder_states.shape().str() +
                                    " and projected encoder states " + projected.shape().str() +
                                    " need the same batch size and decoder width " + std::to_string(score.W_1.size(1)));
    // u^i_j = wᵀ tanh(W_1 d_i + W_2 e_j)                  B×m×n
    return score.score_projected(decoder_states, projected);
}

AttentionOutput PointerAttention::forward(const Var& encoder_states, const Var& decoder_states, const Tensor& mask) {
    check_rank(id(), "encoder states", encoder_states, 3);
    const Tensor keep = scores_keep_mask(id(), mask, encoder_states.size(0), encoder_states.size(1));
    // Padded encoder states are zeroed (by selection) before W_2 reads them:
    // a NaN there reaches neither a score nor the gradient of W_2.
    const Var u = scores(decoder_states, project(hide_unseen_keys(encoder_states, keep)));
    // p(C_i = j) = softmax_j(u^i_j)                       B×m×n
    const Var p = masked_softmax(u, keep);
    return {p, p};
}

Taxonomy PointerAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive_score";
    return t;
}

Tensor not_yet_chosen_mask(const Tensor& targets, int64_t n) {
    if (targets.rank() != 2)
        throw std::invalid_argument("not_yet_chosen_mask: targets " + targets.shape().str() + " need shape B×m");
    const int64_t B = targets.size(0), m = targets.size(1);
    Tensor keep = Tensor::ones(Shape{B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t earlier = 0; earlier < i; ++earlier) {
                const auto j = static_cast<int64_t>(targets.at({b, earlier}));
                if (j < 0 || j >= n)
                    throw std::invalid_argument("not_yet_chosen_mask: target " + std::to_string(j) +
                                                " is outside 0.." + std::to_string(n - 1));
                keep.at({b, i, j}) = 0;
            }
    return keep;
}

}  // namespace attn
