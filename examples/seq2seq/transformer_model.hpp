// The Transformer encoder–decoder of the seq2seq example (`--model
// transformer`): Vaswani et al. (2017), Attention Is All You Need, §3, built
// from the library's layers (attention/transformer.hpp), post-LN as the paper
// and torch.nn.Transformer's default.
//
// Shape legend: B batch, n source length, T target length, d = d_model,
// h heads, N layers (encoder and decoder each), V_s / V source / target vocabulary.
//
//   source    x B×n → E_s[x]·√d + PE (entry 46) → dropout                B×n×d
//   encoder   N × TransformerEncoderLayer(source padding)  → memory M     B×n×d
//   target    y_in B×T (<s> y_1 … y_k) → E_t[y_in]·√d + PE → dropout      B×T×d
//   decoder   N × TransformerDecoderLayer:
//               causal_self_attention (entry 82) with the target padding,
//               cross_attention (entry 83) over M with the source padding, FFN   B×T×d
//   output    logits = Y E_tᵀ          (tied, the default: Vaswani §3.4; Press & Wolf 2017)
//             logits = Y W_outᵀ + b    (tie_output=0)                      B×T×V
//
// Why √d: the embeddings are initialised N(0, 1/d) (fairseq's choice), so the
// tied output starts with logits of unit scale; multiplied by √d the inputs
// have entries of unit variance, the scale of the position encodings.
//
// The attention drawn for a decoding step (NextToken::weights, forward's
// weights) is the last decoder layer's cross-attention averaged over its heads;
// attention_maps() gives every layer and head.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention/transformer.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"

namespace attn::seq2seq {

struct TransformerConfig {
    int64_t source_vocab = 32;
    int64_t target_vocab = 48;
    int64_t d_model = 256;  // d (even: the sinusoids come in pairs; divisible by heads)
    int64_t heads = 4;      // h
    int64_t layers = 3;     // N encoder layers and N decoder layers
    int64_t ffn = 1024;     // the feed-forward layers' inner width
    double dropout = 0.1;   // on the embeddings' sum and in every layer, while training
    bool tie_output = true; // logits = Y E_tᵀ (no output layer of its own)
    bool right_to_left = false;  // the output written right to left (--right-to-left; decoding.hpp)

    // "model=transformer source_vocab=32 ..." and back (checkpoint metadata).
    // parse() throws std::runtime_error naming the key and value it cannot read.
    std::string str() const;
    static TransformerConfig parse(const std::string& text);
    // Throws std::invalid_argument naming the flag and the values when the sizes do not fit together.
    void check() const;
};

class TransformerSeq2Seq : public Translator {
public:
    // `gen` initialises the weights and draws dropout's masks: the model keeps
    // it by reference, so it must outlive the model.
    TransformerSeq2Seq(const TransformerConfig& config, Generator& gen);
    ~TransformerSeq2Seq() override;

    // The encoder: source B×n ids, lengths B → memory M B×n×d and its padding (B×n keep mask).
    struct Memory {
        Var states;
        Tensor padding;
        std::vector<Var> self_weights;  // per encoder layer, B×h×n×n
        Memory select(const std::vector<int64_t>& rows) const;  // beam search replicates one source
    };
    Memory encode(const Tensor& source, const std::vector<int64_t>& lengths);
    // The decoder over the whole of target_in (B×T ids) at once, causally.
    struct Decoded {
        Var logits;                      // B×T×V
        std::vector<Var> self_weights;   // per decoder layer, B×h×T×T
        std::vector<Var> cross_weights;  // per decoder layer, B×h×T×n
    };
    Decoded decode(const Tensor& target_in, const Memory& memory);

    Var forward(const Batch& batch, Tensor* weights = nullptr) override;
    // Decoding runs the decoder again over the tokens so far at every step
    // (no cache of keys and values: the outputs are at most ~25 symbols long).
    std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>& lengths) override;
    // Every attention map of teacher forcing on `batch` (for the report).
    struct AttentionMaps {
        std::vector<Tensor> encoder_self, decoder_self, cross;  // per layer: B×h×n×n, B×h×T×T, B×h×T×n
    };
    AttentionMaps attention_maps(const Batch& batch);

    const TransformerConfig& config() const { return config_; }
    std::string config_text() const override { return config_.str(); }
    std::string describe() const override;
    bool right_to_left() const override { return config_.right_to_left; }
    // Module::set_fast: the layers' fused SDPA kernel, fused LayerNorm and
    // matmul_bias (the same values up to rounding); off by default, the
    // trainer turns them on with --fast.

    Embedding source_embedding, target_embedding;
    std::vector<std::unique_ptr<TransformerEncoderLayer>> encoder;
    std::vector<std::unique_ptr<TransformerDecoderLayer>> decoder;
    std::unique_ptr<Linear> output;  // only with tie_output = false
    Dropout dropout;

private:
    // E[ids]·√d + PE, dropped out: ids B×L → B×L×d.
    Var embed(const Embedding& embedding, const Tensor& ids);

    // A container of named sub-modules, as torch.nn.ModuleList: the layers
    // are "encoder.layers.i" and "decoder.layers.i" in the state_dict.
    struct Stack : Module {
        void add(const std::string& name, Module& child) { register_module(name, child); }
    };
    TransformerConfig config_;
    Stack encoder_stack_, decoder_stack_;    // "encoder", "decoder"
    Stack encoder_layers_, decoder_layers_;  // their "layers"
};

// The B×T keep mask of the real target positions of target_in (every position
// up to and including the last non-<pad>: <s> and the tokens).
Tensor target_padding(const Tensor& target_in);

}  // namespace attn::seq2seq
