// Hierarchical attention (catalog entry 12, `hierarchical_attention`; survey
// §3.1.2, multi-level attention).
//
// Yang, Yang, Dyer, He, Smola, Hovy (2016), Hierarchical Attention Networks
// for Document Classification, NAACL (HAN). Words make sentences, sentences
// make a document; attention pools each level:
//
//   word level, for each sentence s:
//     u_t   = tanh(W_w h_t + b_w)
//     α_t   = softmax_t(u_tᵀ u_w)
//     c⁽ˢ⁾  = Σ_t α_t h_t
//   sentence level, over C = [c⁽¹⁾; …; c⁽ⁿˢ⁾] (HAN re-encodes C with a
//   bidirectional GRU first: the optional sentence encoder; the survey feeds C
//   directly):
//     u_s   = tanh(W_s c⁽ˢ⁾ + b_s)
//     β_s   = softmax_s(u_sᵀ u_S)
//     c⁽ᴰ⁾  = Σ_s β_s c⁽ˢ⁾
//
// Each level is constant-query self-attention (entry 35): the learned
// vectors u_w and u_S are its w. state_dict names: word.W = W_w, word.b = b_w,
// word.w = u_w; sentence.W = W_s, sentence.b = b_s, sentence.w = u_S.
//
// Shapes (row = position, batch first):
//   B documents · n_S sentences · n_max words per sentence · d word-state width
//   · d' sentence-state width (the encoder's output; d without one)
//   words          B×n_S×n_max×d   (the word encoder's states h_t, padded)
//   word mask      B×n_S×n_max     (1 = a real word)
//   sentence mask  B×n_S           (1 = a real sentence; default: has a real word)
//   → document B×d', word weights B×n_S×n_max, sentence weights B×n_S
//
// Padded words and sentences get weight 0 and change nothing; a sentence with
// no word gets zero weights and a zero vector, never NaN.
//
// docs/attention/hierarchical.md; tests in tests/grad/test_hierarchical.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "attention/query_types.hpp"

namespace attn {

class HierarchicalAttention : public AttentionModule {
public:
    // The optional sentence encoder: sentence vectors C B×n_S×d and the sentence
    // mask → B×n_S×d'. Its parameters belong to the caller's model (register
    // the GRU there); the hook only says where it runs.
    using SentenceEncoder = std::function<Var(const Var& sentences, const Tensor& sentence_mask)>;

    // word states of width d, word attention width d_a; sentence states of
    // width d' (= d without an encoder), sentence attention width d_a'.
    HierarchicalAttention(int64_t word_dim, int64_t word_attention_dim, int64_t sentence_dim,
                          int64_t sentence_attention_dim, Generator& gen);
    // Both levels d wide with attention width d_a (HAN: 100 and 100).
    HierarchicalAttention(int64_t dim, int64_t attention_dim, Generator& gen);

    void set_sentence_encoder(SentenceEncoder encoder) { encoder_ = std::move(encoder); }

    struct Output {
        Var document;          // c⁽ᴰ⁾  B×d'
        Var word_weights;      // α     B×n_S×n_max
        Var sentence_weights;  // β     B×n_S
        Var sentences;         // the sentence states the second level attended to   B×n_S×d'
    };
    Output forward(const Var& words, const Tensor& word_mask = {}, const Tensor& sentence_mask = {});

    std::string id() const override { return "hierarchical_attention"; }
    Taxonomy taxonomy() const override;

    ConstantQuerySelfAttention word, sentence;

private:
    SentenceEncoder encoder_;
};

}  // namespace attn
