// Feature levels and representations (entries 11, 14): two granularities, several embeddings.
// The formulas, the papers and the shape legend are in attention/feature_levels.hpp.
#include "attention/feature_levels.hpp"

#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

// ---- 11. attention_via_attention ------------------------------------------------------------

AttentionViaAttention::AttentionViaAttention(int64_t query_dim, int64_t character_dim, int64_t word_dim,
                                             int64_t attention_dim, Generator& gen)
    : word_score(query_dim, word_dim, attention_dim, gen),
      character_score(query_dim + word_dim, character_dim, attention_dim, gen) {
    register_module("word_score", word_score);
    register_module("character_score", character_score);
}

AttentionViaAttentionOutput AttentionViaAttention::forward(const Var& queries, const Var& characters_in,
                                                           const Var& words_in, const Tensor& character_mask,
                                                           const Tensor& word_mask) {
    check_width(id(), "queries", queries, word_score.W_1.size(1), 3);
    check_width(id(), "characters", characters_in, character_score.W_2.size(1), 3);
    check_width(id(), "words", words_in, word_score.W_2.size(1), 3);
    if (queries.size(0) != characters_in.size(0) || queries.size(0) != words_in.size(0))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + ", characters " +
                                    characters_in.shape().str() + " and words " + words_in.shape().str() +
                                    " need the same batch size");
    const Tensor word_keep = scores_keep_mask(id(), word_mask, words_in.size(0), words_in.size(1));
    const Tensor character_keep =
        scores_keep_mask(id(), character_mask, characters_in.size(0), characters_in.size(1));
    // padded words and characters zeroed (by selection) before the scores and the sums read them
    const Var words = hide_unseen_keys(words_in, word_keep);
    const Var characters = hide_unseen_keys(characters_in, character_keep);
    AttentionViaAttentionOutput out;
    // the word level: c^(w) = Σ_l softmax_l(score(q^(c), f^(w)_l)) f^(w)_l       B×m×d_w
    out.word_weights = masked_softmax(word_score.score(queries, words), word_keep);
    out.word_context = attend(out.word_weights, words);
    // the character level, queried by [q^(c); c^(w)]                              B×m×d_c
    const Var via = concat({queries, out.word_context}, -1);  // B×m×(d_q + d_w)
    out.character_weights = masked_softmax(character_score.score(via, characters), character_keep);
    out.character_context = attend(out.character_weights, characters);
    out.output = concat({out.character_context, out.word_context}, -1);  // B×m×(d_c + d_w)
    return out;
}

Taxonomy AttentionViaAttention::taxonomy() const {
    Taxonomy t;
    t.levels = "multi";
    t.scoring = "additive_score";
    return t;
}

// ---- 14. meta_embedding_attention -----------------------------------------------------------

MetaEmbeddingAttention::MetaEmbeddingAttention(const std::vector<int64_t>& source_dims, int64_t dim,
                                               Generator& gen) {
    if (source_dims.empty())
        throw std::invalid_argument("meta_embedding_attention: needs at least one source embedding");
    for (size_t i = 0; i < source_dims.size(); ++i) {
        const int64_t d_i = source_dims[i];
        W.push_back(register_parameter("W_" + std::to_string(i), init::xavier_uniform(Shape{dim, d_i}, gen)));
        b_e.push_back(register_parameter("b_" + std::to_string(i), init::uniform_fan_in(Shape{dim}, d_i, gen)));
    }
    u = register_parameter("u", init::uniform_fan_in(Shape{dim}, dim, gen));
    b = register_parameter("b", Tensor::zeros(Shape{1}));
}

Var MetaEmbeddingAttention::project(const std::vector<Var>& sources) {
    if (static_cast<int64_t>(sources.size()) != num_sources())
        throw std::invalid_argument(id() + ": got " + std::to_string(sources.size()) + " sources, built for " +
                                    std::to_string(num_sources()));
    std::vector<Var> projected;
    for (size_t i = 0; i < sources.size(); ++i) {
        check_width(id(), "source", sources[i], W[i].size(1), 3);
        if (sources[i].size(0) != sources[0].size(0) || sources[i].size(1) != sources[0].size(1))
            throw std::invalid_argument(id() + ": source " + sources[i].shape().str() + " and source " +
                                        sources[0].shape().str() + " need the same batch size and tokens");
        // x^(t_i) = W_{e_i} x^(e_i) + b_{e_i}                B×n×d_t
        projected.push_back(add(matmul(sources[i], W[i], false, true), b_e[i]));
    }
    return stack(projected, 2);  // B×n×E×d_t
}

AttentionOutput MetaEmbeddingAttention::forward(const std::vector<Var>& sources) {
    const Var x = project(sources);  // B×n×E×d_t
    // uᵀ x^(t_i) + b                                         B×n×E
    const Var scores = add(squeeze(matmul(x, reshape(u, {u.size(0), 1})), -1), b);
    // a_i = softmax_i(⋯): one distribution over the sources per token   B×n×E
    const Var a = softmax(scores, -1);
    // x^(e) = Σ_i a_i x^(t_i)                                B×n×1×E · B×n×E×d_t → B×n×d_t
    return {squeeze(matmul(unsqueeze(a, 2), x), 2), a};
}

Taxonomy MetaEmbeddingAttention::taxonomy() const {
    Taxonomy t;
    t.representations = "multi";
    t.scoring = "dot_score";  // uᵀx + b: a learned query, as entry 36
    t.query = "self";
    return t;
}

}  // namespace attn
