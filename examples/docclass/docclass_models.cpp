#include "examples/docclass/docclass_models.hpp"

#include <stdexcept>

#include "attention/general.hpp"
#include "autograd/ops.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

RNNOptions bidirectional() {
    RNNOptions o;
    o.bidirectional = true;
    return o;
}

// Row b of a B×n 0/1 mask → its number of ones (the masks are prefixes).
std::vector<int64_t> mask_lengths(const Tensor& mask) {
    const int64_t B = mask.size(0), n = mask.size(1);
    std::vector<int64_t> lengths(static_cast<size_t>(B), 0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i) lengths[static_cast<size_t>(b)] += mask[b * n + i] != 0 ? 1 : 0;
    return lengths;
}

// The word encoder both hierarchical models share:
// ids B×S×W → embeddings B·S×W×E → bi-GRU states B×S×W×2H.
Var encode_words(const Embedding& embedding, const GRU& rnn, const Tensor& ids,
                 const std::vector<int64_t>& word_lengths) {
    const int64_t B = ids.size(0), S = ids.size(1), W = ids.size(2);
    const Var x = reshape(embedding(ids), {B * S, W, embedding.embedding_dim()});  // B·S×W×E
    const Var h = rnn(x, Var(), word_lengths).output;                              // B·S×W×2H
    return reshape(h, {B, S, W, 2 * rnn.hidden_size()});
}

}  // namespace

Var masked_mean_pool(const Var& x, const Tensor& mask) {
    // Σ_i m_i x_i / max(1, Σ_i m_i)      x B×n×d, mask B×n → B×d
    const Tensor m = mask.reshape(Shape{mask.size(0), mask.size(1), 1});
    Tensor count = sum(mask, 1, true);  // B×1
    for (int64_t b = 0; b < count.numel(); ++b) count[b] = count[b] > 0 ? 1 / count[b] : 0;
    return mul(sum(mul(x, Var(m)), 1), Var(count));
}

Var masked_max_pool(const Var& x, const Tensor& mask) {
    // max over the real positions; −1e9 at the padding never wins a real row,
    // and an all-padding row is multiplied by 0.
    const Tensor m = mask.reshape(Shape{mask.size(0), mask.size(1), 1});
    const Var filled = where(m, x, Var(Tensor::full({1}, real(-1e9))));
    const Tensor any = max(mask, 1, true);  // B×1
    return mul(max(filled, 1), Var(any));
}

// ---- HAN -------------------------------------------------------------------------

HierarchicalAttentionNetwork::HierarchicalAttentionNetwork(const DocModelConfig& c, Generator& gen)
    : embedding(c.vocab_size, c.embed_dim, gen, Vocabulary::pad),
      word_rnn(c.embed_dim, c.word_hidden, gen, bidirectional()),
      sentence_rnn(2 * c.word_hidden, c.sentence_hidden, gen, bidirectional()),
      attention(2 * c.word_hidden, c.word_attention, 2 * c.sentence_hidden, c.sentence_attention, gen),
      classifier(2 * c.sentence_hidden, c.num_classes, gen) {
    register_module("embedding", embedding);
    register_module("word_rnn", word_rnn);
    register_module("attention", attention);
    register_module("sentence_rnn", sentence_rnn);
    register_module("classifier", classifier);
    // HAN re-encodes the sentence vectors with a bi-GRU before attending:
    // C B×S×2H_w → B×S×2H_s, each document over its own sentences.
    attention.set_sentence_encoder([this](const Var& sentences, const Tensor& sentence_mask) {
        return sentence_rnn(sentences, Var(), mask_lengths(sentence_mask)).output;
    });
}

DocOutput HierarchicalAttentionNetwork::forward(const DocBatch& batch) {
    return forward(batch.ids, batch.word_mask, batch.sentence_mask);
}

DocOutput HierarchicalAttentionNetwork::forward(const Tensor& ids, const Tensor& word_mask,
                                                const Tensor& sentence_mask) {
    if (ids.rank() != 3 || word_mask.shape() != ids.shape() || sentence_mask.shape() != Shape{ids.size(0), ids.size(1)})
        throw std::invalid_argument("HierarchicalAttentionNetwork: ids " + ids.shape().str() + ", word mask " +
                                    word_mask.shape().str() + " and sentence mask " + sentence_mask.shape().str() +
                                    " must be B×S×W, B×S×W and B×S");
    const std::vector<int64_t> word_lengths =
        mask_lengths(word_mask.reshape(Shape{ids.size(0) * ids.size(1), ids.size(2)}));
    const Var words = encode_words(embedding, word_rnn, ids, word_lengths);            // B×S×W×2H
    const HierarchicalAttention::Output a = attention.forward(words, word_mask, sentence_mask);
    return {classifier(a.document), a.word_weights.value(), a.sentence_weights.value()};  // B×C
}

// ---- HN-AVE, HN-MAX -----------------------------------------------------------------

HierarchicalPoolingNetwork::HierarchicalPoolingNetwork(const DocModelConfig& c, Pool pool, Generator& gen)
    : embedding(c.vocab_size, c.embed_dim, gen, Vocabulary::pad),
      word_rnn(c.embed_dim, c.word_hidden, gen, bidirectional()),
      sentence_rnn(2 * c.word_hidden, c.sentence_hidden, gen, bidirectional()),
      classifier(2 * c.sentence_hidden, c.num_classes, gen),
      pool_(pool) {
    register_module("embedding", embedding);
    register_module("word_rnn", word_rnn);
    register_module("sentence_rnn", sentence_rnn);
    register_module("classifier", classifier);
}

DocOutput HierarchicalPoolingNetwork::forward(const DocBatch& batch) {
    const int64_t B = batch.batch(), S = batch.ids.size(1), W = batch.ids.size(2);
    auto pool = [this](const Var& x, const Tensor& mask) {
        return pool_ == Pool::mean ? masked_mean_pool(x, mask) : masked_max_pool(x, mask);
    };
    const Var words = encode_words(embedding, word_rnn, batch.ids, batch.word_lengths);    // B×S×W×2H
    const Var flat = reshape(words, {B * S, W, words.size(3)});
    const Var sentences = reshape(pool(flat, batch.word_mask.reshape(Shape{B * S, W})), {B, S, words.size(3)});
    const Var h = sentence_rnn(sentences, Var(), batch.sentence_counts).output;          // B×S×2H
    return {classifier(pool(h, batch.sentence_mask)), Tensor(), Tensor()};
}

// ---- flat ------------------------------------------------------------------------

FlatAttentionNetwork::FlatAttentionNetwork(const DocModelConfig& c, Generator& gen)
    : embedding(c.vocab_size, c.embed_dim, gen, Vocabulary::pad),
      rnn(c.embed_dim, c.word_hidden, gen, bidirectional()),
      attention(2 * c.word_hidden, c.word_attention, gen),
      classifier(2 * c.word_hidden, c.num_classes, gen) {
    register_module("embedding", embedding);
    register_module("rnn", rnn);
    register_module("attention", attention);
    register_module("classifier", classifier);
}

DocOutput FlatAttentionNetwork::forward(const DocBatch& batch) {
    const int64_t B = batch.batch(), S = batch.ids.size(1), W = batch.ids.size(2), T = batch.flat_ids.size(1);
    const Var h = rnn(embedding(batch.flat_ids), Var(), batch.flat_lengths).output;  // B×T×2H
    const AttentionOutput a = attention.forward(h, length_mask(batch.flat_lengths, T));
    const Var logits = classifier(squeeze(a.output, 1));

    // Document-wide word weights B×T → per sentence (sums) and within it.
    const Tensor& alpha = a.weights.value();  // B×1×T
    Tensor words = Tensor::zeros({B, S, W}), sentences = Tensor::zeros({B, S});
    for (int64_t b = 0; b < B; ++b) {
        int64_t t = 0;
        for (int64_t s = 0; s < S; ++s) {
            const int64_t n = batch.word_lengths[static_cast<size_t>(b * S + s)];
            for (int64_t w = 0; w < n; ++w) sentences[b * S + s] += alpha[b * T + t + w];
            for (int64_t w = 0; w < n; ++w)
                words[(b * S + s) * W + w] = sentences[b * S + s] > 0 ? alpha[b * T + t + w] / sentences[b * S + s] : 0;
            t += n;
        }
    }
    return {logits, words, sentences};
}

// ---- bag of words -------------------------------------------------------------------

BagOfWords::BagOfWords(const DocModelConfig& c, Generator& gen)
    : weight(c.vocab_size, c.num_classes, gen, Vocabulary::pad) {
    register_module("weight", weight);
    weight.weight.value().fill_(0);  // logistic regression starts from zero
    bias = register_parameter("bias", Tensor::zeros({c.num_classes}));
}

DocOutput BagOfWords::forward(const DocBatch& batch) {
    // x_v = count of word v / number of words;  logits = Wᵀx + b   B×C
    const int64_t T = batch.flat_ids.size(1);
    const Var per_word = weight(batch.flat_ids);  // B×T×C (padding rows are zero)
    return {add(masked_mean_pool(per_word, length_mask(batch.flat_lengths, T)), bias), Tensor(), Tensor()};
}

std::unique_ptr<DocModel> make_doc_model(const std::string& name, const DocModelConfig& config, Generator& gen) {
    if (name == "han") return std::make_unique<HierarchicalAttentionNetwork>(config, gen);
    if (name == "hn-ave")
        return std::make_unique<HierarchicalPoolingNetwork>(config, HierarchicalPoolingNetwork::Pool::mean, gen);
    if (name == "hn-max")
        return std::make_unique<HierarchicalPoolingNetwork>(config, HierarchicalPoolingNetwork::Pool::max, gen);
    if (name == "flat") return std::make_unique<FlatAttentionNetwork>(config, gen);
    if (name == "bow") return std::make_unique<BagOfWords>(config, gen);
    throw std::invalid_argument("docclass: --model must be han, hn-ave, hn-max, flat or bow, got '" + name + "'");
}

}  // namespace attn
