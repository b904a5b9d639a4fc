// The encoder–decoder with attention of the seq2seq example (Bahdanau et al.,
// 2015; Luong et al., 2015), batched with padding masks: `--model rnn`, one of
// the two Translators of decoding.hpp (the other: transformer_model.hpp).
//
// Shape legend: B batch, n source length, T target length, E embedding,
// H encoder hidden per direction (encoder states d_h = 2H), S decoder hidden
// d_s, A attention width, V target vocabulary, F the fed-back vector's width.
//
//   encoder   x B×n → Embedding B×n×E → L-layer bidirectional GRU → h̄ B×n×2H
//             (padding rows 0; with dropout, also between the layers)
//   init      s_0 = tanh(W_init [h→_last ; h←_first] + b)                 B×S
//             (the top layer's final states)
//   decoder   s_t = GRUCell([emb(y_{t−1}) ; f_{t−1}], s_{t−1})          B×S  (f_0 = 0)
//   attention queried by the new state s_t, over h̄ with the padding masked:
//     bahdanau  bahdanau_attention: e = vᵀ tanh(W_a s_t + U_a h̄_j), soft
//                                    o_t = [s_t ; c_t]   f_t = c_t
//     luong     luong_attention with any score and alignment of the table
//               (attention/by_id.hpp: --score dot|general|concat|scaled|...,
//               --align soft|local-m|local-p|...)
//                          h̃_t = tanh(W_c [c_t ; s_t])       o_t = h̃_t          f_t = h̃_t
//   output    logits_t = W_out o_t + b_out                               B×V
// With dropout p > 0 (training only), the source and target embeddings and
// o_t are dropped out (Srivastava et al., 2014); no parameters are added.
// Input feeding (on by default) is the f_{t−1} half of the decoder input;
// --no-input-feeding leaves it out.
//
// The defaults are workload W2 of bench/WORKLOADS.md (819,760 parameters
// with source vocabulary 32 and target vocabulary 48).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attention/query_types.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "examples/seq2seq/seq2seq_data.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/rnn.hpp"

namespace attn::seq2seq {

struct ModelConfig {
    int64_t source_vocab = 32;
    int64_t target_vocab = 48;
    int64_t embedding = 64;        // E (source and target)
    int64_t encoder_hidden = 128;  // H per direction
    int64_t encoder_layers = 1;    // L, stacked bidirectional GRU layers
    int64_t decoder_hidden = 256;  // S
    int64_t attention_dim = 256;   // A (additive, concat, local-p's predictor)
    std::string attention = "bahdanau";    // bahdanau | luong
    std::string score = "additive_score";  // a score of attention/by_id.hpp's table (luong)
    std::string align = "soft_alignment";  // an alignment of its table (luong)
    bool input_feeding = true;
    int64_t window = 4;  // D, the half-width of the local windows
    double dropout = 0;  // on the embeddings and on o_t, while training
    // The score's and the alignment's named options, "name=value,..." (luong;
    // attention/by_id.hpp: a row says which it takes), e.g. "beta=2.5".
    std::string score_options = "", align_options = "";
    // The order the decoder writes the output in: left to right, or right to
    // left (--right-to-left: trained on reversed targets; decoding.hpp).
    bool right_to_left = false;

    // "attention=bahdanau score=additive_score ..." and back (checkpoint
    // metadata). parse() also reads the names before the score table
    // (attention=additive|dot|general|concat|scaled, align=global).
    std::string str() const;
    static ModelConfig parse(const std::string& text);
    // The same configuration with the older names and the short names of
    // the tables replaced by catalog ids; throws on an unknown one.
    ModelConfig canonical() const;
};

// What the decoder needs from the source, computed once per batch.
struct Encoded {
    Var states;                          // h̄  B×n×2H
    Tensor mask;                         // B×n, 1 = a real source position
    Var summary;                         // [h→_last ; h←_first]  B×2H
    BahdanauAttention::Memory memory{};  // bahdanau only: U_a h̄ precomputed
    // The rows `rows` of every part (beam search replicates one source).
    Encoded select(const std::vector<int64_t>& rows) const;
};

struct DecoderState {
    Var s;     // B×S
    Var feed;  // B×F (undefined without input feeding)
};

struct StepOutput {
    Var logits;   // B×V
    Var weights;  // B×n, the attention of this step
    DecoderState state;
};

class Seq2SeqModel : public Translator {
public:
    // `gen` initialises the weights and, with dropout, draws its masks: the
    // model keeps it by reference, so it must outlive the model.
    Seq2SeqModel(const ModelConfig& config, Generator& gen);

    // source B×n ids, lengths B → h̄ and the mask.
    Encoded encode(const Tensor& source, const std::vector<int64_t>& lengths);
    DecoderState initial_state(const Encoded& enc);
    // One decoder step: previous tokens B (ids as reals), at target position t.
    StepOutput step(const Encoded& enc, const DecoderState& state, const Tensor& previous, int64_t t);
    // Teacher forcing over a whole batch: logits B×T×V; the weights B×T×n if asked.
    Var forward(const Batch& batch, Tensor* weights = nullptr) override;
    // Decoding: the encoder once, then step() with the state s_t carried over.
    std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>& lengths) override;

    const ModelConfig& config() const { return config_; }
    std::string config_text() const override { return config_.str(); }
    std::string describe() const override;
    bool right_to_left() const override { return config_.right_to_left; }
    // The fast paths (Module::set_fast): the encoder's GRU in
    // RnnMode::sequence (each direction one op, its batch split over the
    // threads), the decoder's GRUCell with fused gates, the linear layers'
    // matmul_bias and Bahdanau attention's score as additive_score_fused (the
    // same values up to rounding). Without it the model runs the composed
    // versions, to read and step through; the trainer turns them on with
    // --fast, W2 always.

    Embedding source_embedding, target_embedding;
    GRU encoder;
    Linear init;
    GRUCell decoder;
    Linear output;
    Dropout dropout;

private:
    // o_t, f_t, α_t from the new state s_t
    struct Attended {
        Var out, feed, weights;
    };
    Attended attend_step(const Encoded& enc, const Var& s, int64_t t);

    ModelConfig config_;
    std::unique_ptr<BahdanauAttention> bahdanau_;  // --attention bahdanau
    std::unique_ptr<LuongAttention> luong_;        // --attention luong
};

}  // namespace attn::seq2seq
