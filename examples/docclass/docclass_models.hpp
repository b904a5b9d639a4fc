// The document classifiers of Yang et al. (2016), Hierarchical Attention
// Networks for Document Classification, and the paper's baselines.
//
// Shape legend: B documents, S sentences, W words per sentence, T words per
// document (flat), E embedding width, H hidden size per GRU direction (2H =
// the bi-GRU's state width), A attention width, C classes.
//
//   han     word bi-GRU + word attention → sentence vectors; sentence bi-GRU +
//           sentence attention → document vector; Linear → C. (HAN, §2)
//             u_it = tanh(W_w h_it + b_w), α_it = softmax_t(u_itᵀ u_w), s_i = Σ_t α_it h_it
//             u_i  = tanh(W_s h_i + b_s),  α_i  = softmax_i(u_iᵀ u_s),  v   = Σ_i α_i h_i
//   hn-ave  the same encoders, mean pooling instead of each attention (HN-AVE)
//   hn-max  the same encoders, max pooling instead of each attention (HN-MAX)
//   flat    one bi-GRU over all the words of the document + one attention
//   bow     logistic regression on the document's word frequencies
//
// With W3's sizes (vocabulary 20,000, E 200, H 50, A 100, C 10) HAN has
// 4,142,610 parameters, as the PyTorch reference of bench/WORKLOADS.md.
#pragma once

#include <memory>
#include <string>

#include "attention/hierarchical.hpp"
#include "examples/docclass/docclass_data.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/rnn.hpp"

namespace attn {

struct DocModelConfig {
    int64_t vocab_size = 20000;
    int64_t embed_dim = 200;
    int64_t word_hidden = 50;        // per direction
    int64_t word_attention = 100;
    int64_t sentence_hidden = 50;    // per direction
    int64_t sentence_attention = 100;
    int64_t num_classes = 10;
};

// What a model returns: logits for the loss, and (as plain tensors, for the
// pictures and the key-sentence score) the attention it paid, when it has any.
struct DocOutput {
    Var logits;               // B×C
    Tensor word_weights;      // B×S×W: each word's weight within its sentence (undefined: none)
    Tensor sentence_weights;  // B×S: each sentence's weight in the document (undefined: none)
};

class DocModel : public Module {
public:
    virtual DocOutput forward(const DocBatch& batch) = 0;
    virtual std::string name() const = 0;  // "han", "hn-ave", ...
    // The fast paths (Module::set_fast): each GRU in RnnMode::sequence, the
    // classifier's matmul_bias (the same values up to rounding). Without it a
    // model runs the composed versions, to read and step through; the trainer
    // turns them on with --fast, W3 always.
};

// HAN. Also used by bench/w3_han.cpp.
class HierarchicalAttentionNetwork : public DocModel {
public:
    HierarchicalAttentionNetwork(const DocModelConfig& config, Generator& gen);
    DocOutput forward(const DocBatch& batch) override;
    // ids B×S×W, word mask B×S×W, sentence mask B×S (1 = real; real words and
    // sentences come first, padding after them).
    DocOutput forward(const Tensor& ids, const Tensor& word_mask, const Tensor& sentence_mask);
    std::string name() const override { return "han"; }

    Embedding embedding;
    GRU word_rnn;
    GRU sentence_rnn;
    HierarchicalAttention attention;  // hierarchical_attention: attention.word (W_w, b_w, u_w), attention.sentence (W_s, b_s, u_s)
    Linear classifier;
};

// HN-AVE and HN-MAX: HAN's encoders with pooling in place of attention.
class HierarchicalPoolingNetwork : public DocModel {
public:
    enum class Pool { mean, max };
    HierarchicalPoolingNetwork(const DocModelConfig& config, Pool pool, Generator& gen);
    DocOutput forward(const DocBatch& batch) override;
    std::string name() const override { return pool_ == Pool::mean ? "hn-ave" : "hn-max"; }

    Embedding embedding;
    GRU word_rnn;
    GRU sentence_rnn;
    Linear classifier;

private:
    Pool pool_;
};

// One bi-GRU over the whole document and one attention over all its words.
// Its weights are reported per sentence: a sentence's weight is the sum of
// its words' weights, a word's weight within its sentence is renormalised.
class FlatAttentionNetwork : public DocModel {
public:
    FlatAttentionNetwork(const DocModelConfig& config, Generator& gen);
    DocOutput forward(const DocBatch& batch) override;
    std::string name() const override { return "flat"; }

    Embedding embedding;
    GRU rnn;
    ConstantQuerySelfAttention attention;  // constant_query_self_attention over all words
    Linear classifier;
};

// Bag of words: logits = W · (word counts / number of words) + b, the
// multinomial logistic regression of the paper's baselines (on frequencies).
// W is stored as an embedding table V×C (row w = the class weights of word w).
class BagOfWords : public DocModel {
public:
    BagOfWords(const DocModelConfig& config, Generator& gen);
    DocOutput forward(const DocBatch& batch) override;
    std::string name() const override { return "bow"; }  // nothing to fuse: one lookup and a sum

    Embedding weight;  // V×C
    Var bias;          // C
};

// "han" | "hn-ave" | "hn-max" | "flat" | "bow"; throws naming the choices otherwise.
std::unique_ptr<DocModel> make_doc_model(const std::string& name, const DocModelConfig& config, Generator& gen);

// Masked pooling over axis 1 of x B×n×d with mask B×n (1 = real): the mean,
// or the maximum; a row with no real position gives zeros.
Var masked_mean_pool(const Var& x, const Tensor& mask);
Var masked_max_pool(const Var& x, const Tensor& mask);

}  // namespace attn
