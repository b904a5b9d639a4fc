// Hierarchical attention (entry 12): words into sentences, sentences into a document.
// The formulas, the papers and the shape legend are in attention/hierarchical.hpp.
#include "attention/hierarchical.hpp"

#include <stdexcept>

#include "tensor/ops.hpp"

namespace attn {

HierarchicalAttention::HierarchicalAttention(int64_t word_dim, int64_t word_attention_dim, int64_t sentence_dim,
                                             int64_t sentence_attention_dim, Generator& gen)
    : word(word_dim, word_attention_dim, gen), sentence(sentence_dim, sentence_attention_dim, gen) {
    register_module("word", word);
    register_module("sentence", sentence);
}

HierarchicalAttention::HierarchicalAttention(int64_t dim, int64_t attention_dim, Generator& gen)
    : HierarchicalAttention(dim, attention_dim, dim, attention_dim, gen) {}

HierarchicalAttention::Output HierarchicalAttention::forward(const Var& words_in, const Tensor& word_mask,
                                                             const Tensor& sentence_mask) {
    check_rank(id(), "words", words_in, 4);
    const int64_t B = words_in.size(0), n_S = words_in.size(1), n_max = words_in.size(2), d = words_in.size(3);
    if (d != word.W.size(1))
        throw std::invalid_argument(id() + ": words " + words_in.shape().str() + " need width " +
                                    std::to_string(word.W.size(1)));
    if (word_mask.defined() && word_mask.shape() != Shape{B, n_S, n_max})
        throw std::invalid_argument(id() + ": word mask " + word_mask.shape().str() + " does not fit words " +
                                    words_in.shape().str() + " (it needs B×n_S×n_max)");
    if (sentence_mask.defined() && sentence_mask.shape() != Shape{B, n_S})
        throw std::invalid_argument(id() + ": sentence mask " + sentence_mask.shape().str() +
                                    " does not fit words " + words_in.shape().str() + " (it needs B×n_S)");
    // A sentence is real when it has a real word, unless the caller says otherwise.
    const Tensor sentence_keep =
        sentence_mask.defined() ? sentence_mask : word_mask.defined() ? max(word_mask, -1) : Tensor();
    // The words of a padded sentence are padding too: they, and the padded
    // words, are zeroed (by selection) before the word level reads them, so a
    // NaN there reaches neither c⁽ˢ⁾ nor the sentence level (keep B×n_S×1×n_max).
    const Var words = hide_unseen_keys(
        words_in, combine_masks(word_mask.defined() ? word_mask.reshape(Shape{B, n_S, 1, n_max}) : Tensor(),
                                sentence_keep.defined() ? sentence_keep.reshape(Shape{B, n_S, 1, 1}) : Tensor()));

    // Word level, every sentence of every document at once: B·n_S sequences.
    //   α_t = softmax_t(u_wᵀ tanh(W_w h_t + b_w)),  c⁽ˢ⁾ = Σ_t α_t h_t
    const Var flat = reshape(words, {B * n_S, n_max, d});
    const AttentionOutput by_word =
        word.forward(flat, word_mask.defined() ? word_mask.reshape(Shape{B * n_S, n_max}) : Tensor());
    Var sentences = reshape(by_word.output, {B, n_S, d});  // C   B×n_S×d

    // HAN's sentence encoder (a BiGRU over C), if any.          B×n_S×d'
    if (encoder_) sentences = encoder_(sentences, sentence_keep);
    check_rank(id(), "encoded sentences", sentences, 3);
    if (sentences.size(0) != B || sentences.size(1) != n_S || sentences.size(2) != sentence.W.size(1))
        throw std::invalid_argument(id() + ": sentence states " + sentences.shape().str() + " need shape " +
                                    Shape{B, n_S, sentence.W.size(1)}.str() +
                                    (encoder_ ? " (check the sentence encoder)" : " (d' = d without an encoder)"));

    // Sentence level:
    //   β_s = softmax_s(u_Sᵀ tanh(W_s c⁽ˢ⁾ + b_s)),  c⁽ᴰ⁾ = Σ_s β_s c⁽ˢ⁾
    const AttentionOutput by_sentence = sentence.forward(sentences, sentence_keep);
    return {squeeze(by_sentence.output, 1),                  // B×d'
            reshape(by_word.weights, {B, n_S, n_max}),       // B×n_S×n_max
            squeeze(by_sentence.weights, 1),                 // B×n_S
            sentences};
}

Taxonomy HierarchicalAttention::taxonomy() const {
    Taxonomy t;
    t.levels = "multi";
    t.scoring = "additive_score";
    t.query = "self";
    return t;
}

}  // namespace attn
