// Feature levels and feature representations (survey §3.1.2 and §3.1.3):
// attention over features of two granularities, and attention over several
// representations of the same input.
//
//   11 attention_via_attention   words first, then characters guided by the word context   Zhao & Zhang 2018
//   14 meta_embedding_attention  a softmax over E embeddings of each token                 Kiela+ 2018 (DME)
//
// Entry 10, `single_level_attention`, and entry 13, `single_representational_attention`,
// are the taxonomy tags of every other module (attention/general.hpp); entry 12,
// `hierarchical_attention`, is the other multi-level mechanism (attention/hierarchical.hpp).
//
// docs/attention/feature_levels.md; tests in tests/grad/test_feature_levels.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 11. attention_via_attention ------------------------------------------------------------
// Zhao & Zhang (2018), Attention-via-Attention Neural Machine Translation, AAAI.
// A character-level decoder state q^(c) first attends to the source words,
// and the word context then guides its attention over the source characters:
//   c^(w) = Attn_w(q^(c); F^(w))              the word level
//   c^(c) = Attn_c([q^(c); c^(w)]; F^(c))     the character level, via the word context
//   output [c^(c); c^(w)]
// Attn(q; F) = Σ_l softmax_l(e_l) f_l with the additive score (entry 15):
//   e_l = wᵀ tanh(W_1 q + W_2 f_l + b); Attn_c's W_1 is d_a×(d_q + d_w).
// Shapes: queries B×m×d_q (m decoder steps), characters B×n_c×d_c, words
// B×n_w×d_w, key masks B×n_c and B×n_w → output B×m×(d_c + d_w),
// character weights B×m×n_c, word weights B×m×n_w.
struct AttentionViaAttentionOutput {
    Var output;             // [c^(c); c^(w)]  B×m×(d_c + d_w)
    Var character_context;  // c^(c)           B×m×d_c
    Var word_context;       // c^(w)           B×m×d_w
    Var character_weights;  // B×m×n_c
    Var word_weights;       // B×m×n_w
};

class AttentionViaAttention : public AttentionModule {
public:
    AttentionViaAttention(int64_t query_dim, int64_t character_dim, int64_t word_dim, int64_t attention_dim,
                          Generator& gen);

    AttentionViaAttentionOutput forward(const Var& queries, const Var& characters, const Var& words,
                                        const Tensor& character_mask = {}, const Tensor& word_mask = {});

    std::string id() const override { return "attention_via_attention"; }
    Taxonomy taxonomy() const override;

    AdditiveScore word_score;       // Attn_w: queries d_q, keys d_w
    AdditiveScore character_score;  // Attn_c: queries d_q + d_w, keys d_c
};

// ---- 14. meta_embedding_attention -----------------------------------------------------------
// Kiela, Wang, Cho (2018), Dynamic Meta-Embeddings for Improved Sentence
// Representations, EMNLP (DME). Each token has E embeddings x^(e_i) of widths
// d_{e_i}; each is projected to a common width d_t, and a softmax over the E
// projections decides how much each source contributes, token by token:
//   x^(t_i) = W_{e_i} x^(e_i) + b_{e_i}                 W_{e_i} d_t×d_{e_i}, b_{e_i} d_t
//   a_i = softmax_i(uᵀ x^(t_i) + b)                     u d_t, b a scalar
//   x^(e) = Σ_i a_i x^(t_i)
// Self-attention over the E representations of one token. The scalar b is the
// same for every source, so it cancels in the softmax (its gradient is 0); it
// is kept because the paper has it. The attention is per token, across
// sources, so padding needs no mask: a padded token's output is ignored by
// whatever reads the sentence.
// Shapes: E tensors B×n×d_{e_i} → output B×n×d_t, weights B×n×E.
class MetaEmbeddingAttention : public AttentionModule {
public:
    MetaEmbeddingAttention(const std::vector<int64_t>& source_dims, int64_t dim, Generator& gen);

    AttentionOutput forward(const std::vector<Var>& sources);
    // x^(t_i) for every source, stacked: B×n×E×d_t
    Var project(const std::vector<Var>& sources);

    int64_t num_sources() const { return static_cast<int64_t>(W.size()); }
    std::string id() const override { return "meta_embedding_attention"; }
    Taxonomy taxonomy() const override;

    std::vector<Var> W, b_e;  // per source: W_{e_i} ("W_i"), b_{e_i} ("b_i")
    Var u, b;                 // the shared score: u d_t, b shape 1
};

}  // namespace attn
