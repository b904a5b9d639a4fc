#include "examples/seq2seq/seq2seq_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "attention/by_id.hpp"
#include "examples/seq2seq/config_text.hpp"
#include "autograd/ops.hpp"
#include "tensor/ops.hpp"

namespace attn::seq2seq {

// ---- configuration --------------------------------------------------------------------

std::string ModelConfig::str() const {
    std::ostringstream s;
    s << "source_vocab=" << source_vocab << " target_vocab=" << target_vocab << " embedding=" << embedding
      << " encoder_hidden=" << encoder_hidden << " encoder_layers=" << encoder_layers
      << " decoder_hidden=" << decoder_hidden
      << " attention_dim=" << attention_dim << " attention=" << attention << " score=" << score << " align=" << align
      << " input_feeding=" << (input_feeding ? 1 : 0) << " window=" << window << " dropout=" << dropout;
    // only when given, so that a model without them reads as before
    if (!score_options.empty()) s << " score_options=" << score_options;
    if (!align_options.empty()) s << " align_options=" << align_options;
    if (right_to_left) s << " output=right-to-left";
    return s.str();
}

ModelConfig ModelConfig::parse(const std::string& text) {
    const std::string who = "seq2seq config";
    ModelConfig c;
    for (const auto& [key, value] : config_items(text, who)) {
        auto number = [&, &key = key, &value = value] { return config_size(who, key, value); };
        if (key == "source_vocab") c.source_vocab = number();
        else if (key == "target_vocab") c.target_vocab = number();
        else if (key == "embedding") c.embedding = number();
        else if (key == "encoder_hidden") c.encoder_hidden = number();
        else if (key == "encoder_layers") c.encoder_layers = number();  // absent in older checkpoints: 1
        else if (key == "decoder_hidden") c.decoder_hidden = number();
        else if (key == "attention_dim") c.attention_dim = number();
        else if (key == "attention") c.attention = value;
        else if (key == "score") c.score = value;
        else if (key == "align") c.align = value;
        else if (key == "input_feeding") c.input_feeding = value == "1";
        else if (key == "window") c.window = number();
        else if (key == "dropout") c.dropout = config_probability(who, key, value);
        else if (key == "score_options") c.score_options = value;
        else if (key == "align_options") c.align_options = value;
        else if (key == "output") c.right_to_left = config_direction(who, key, value);
        else throw std::runtime_error(who + ": unknown key '" + key + "'");
    }
    return c.canonical();
}

ModelConfig ModelConfig::canonical() const {
    ModelConfig c = *this;
    // Before the score table, --attention named the score and meant Luong's
    // form for every score but the additive one.
    if (c.attention == "additive") c.attention = "bahdanau", c.score = "additive_score";
    for (const char* old : {"dot", "general", "concat", "scaled"})
        if (c.attention == old) c.attention = "luong", c.score = old;
    if (c.align == "global") c.align = "soft_alignment";
    if (c.attention != "bahdanau" && c.attention != "luong")
        throw std::invalid_argument("seq2seq: --attention must be bahdanau or luong, got '" + c.attention + "'");
    c.score = canonical_score(c.score);  // throws, listing the choices
    c.align = canonical_alignment(c.align);
    parse_named_options(c.score_options, "--score-options");  // throws on what it cannot read
    parse_named_options(c.align_options, "--align-options");
    return c;
}

namespace {

bool is_bahdanau(const ModelConfig& c) { return c.attention == "bahdanau"; }
// F: the fed-back vector is c_t (Bahdanau, 2H wide) or h̃_t (Luong, S wide).
int64_t feed_dim(const ModelConfig& c) { return is_bahdanau(c) ? 2 * c.encoder_hidden : c.decoder_hidden; }
int64_t decoder_input(const ModelConfig& c) { return c.embedding + (c.input_feeding ? feed_dim(c) : 0); }
// o_t: [s_t ; c_t] (Bahdanau) or h̃_t (Luong).
int64_t output_input(const ModelConfig& c) {
    return is_bahdanau(c) ? c.decoder_hidden + 2 * c.encoder_hidden : c.decoder_hidden;
}

ModelConfig checked(const ModelConfig& config) {
    const ModelConfig c = config.canonical();
    if (is_bahdanau(c) && (c.score != "additive_score" || c.align != "soft_alignment"))
        throw std::invalid_argument("seq2seq: Bahdanau's attention is the additive score with the soft alignment; for " +
                                    c.score + " with " + c.align + " use --attention luong");
    if (alignment_info(c.align).self_attention_only)
        throw std::invalid_argument("seq2seq: " + c.align + " works on self-attention only, not on a decoder's query");
    if (!(c.dropout >= 0 && c.dropout < 1))
        throw std::invalid_argument("seq2seq: --dropout must be in [0, 1), got " + std::to_string(c.dropout));
    if (score_info(c.score).same_width && c.decoder_hidden != 2 * c.encoder_hidden)
        throw std::invalid_argument("seq2seq: " + c.score + " compares the decoder state with the encoder states " +
                                    "by a dot product, so it needs decoder hidden = 2 × encoder hidden, got " +
                                    std::to_string(c.decoder_hidden) + " and 2 × " + std::to_string(c.encoder_hidden));
    return c;
}

// Column t of a B×T id tensor → B.
Tensor column(const Tensor& ids, int64_t t) {
    const int64_t B = ids.size(0), T = ids.size(1);
    Tensor out = Tensor::empty(Shape{B});
    for (int64_t b = 0; b < B; ++b) out[b] = ids[b * T + t];
    return out;
}

}  // namespace

// ---- the model ---------------------------------------------------------------------------

Encoded Encoded::select(const std::vector<int64_t>& rows) const {
    Encoded e;
    e.states = index_select(states, 0, rows);
    e.mask = attn::index_select(mask, 0, rows);
    e.summary = index_select(summary, 0, rows);
    if (memory.states.defined()) {
        e.memory.states = e.states;
        e.memory.projected = index_select(memory.projected, 0, rows);
        if (memory.keep.defined()) e.memory.keep = attn::index_select(memory.keep, 0, rows);
    }
    return e;
}

Seq2SeqModel::Seq2SeqModel(const ModelConfig& config, Generator& gen)
    : source_embedding(checked(config).source_vocab, config.embedding, gen, kPad),
      target_embedding(config.target_vocab, config.embedding, gen, kPad),
      encoder(config.embedding, config.encoder_hidden, gen,
              {.num_layers = config.encoder_layers, .bidirectional = true, .dropout = static_cast<real>(config.dropout)}),
      init(2 * config.encoder_hidden, config.decoder_hidden, gen),
      decoder(decoder_input(checked(config)), config.decoder_hidden, gen),
      output(output_input(checked(config)), config.target_vocab, gen),
      dropout(static_cast<real>(config.dropout), gen),
      config_(checked(config)) {
    encoder.use_dropout_generator(gen);  // the masks between its layers follow the trainer's reseeding
    register_module("source_embedding", source_embedding);
    register_module("encoder", encoder);
    register_module("init", init);
    register_module("target_embedding", target_embedding);
    register_module("decoder", decoder);
    const int64_t S = config_.decoder_hidden, D = 2 * config_.encoder_hidden, A = config_.attention_dim;
    if (is_bahdanau(config_)) {
        bahdanau_ = std::make_unique<BahdanauAttention>(S, D, A, gen);  // bahdanau_attention
        register_module("attention", *bahdanau_);
    } else {
        // luong_attention: the score and the alignment by id, from the table
        // that the --score and --align flags read (attention/by_id.hpp).
        luong_ = std::make_unique<LuongAttention>(
            S, D,
            LuongAttention::Options{.score = config_.score,
                                    .align = config_.align,
                                    .window = config_.window,
                                    .attention_dim = A,
                                    .score_options = parse_named_options(config_.score_options, "--score-options"),
                                    .align_options = parse_named_options(config_.align_options, "--align-options")},
            gen);
        register_module("attention", *luong_);
    }
    register_module("output", output);
    register_module("dropout", dropout);  // no parameters: the state dict is unchanged
}

std::string Seq2SeqModel::describe() const { return "Seq2SeqModel(" + config_.str() + ")"; }

Encoded Seq2SeqModel::encode(const Tensor& source, const std::vector<int64_t>& lengths) {
    Encoded enc;
    const Var x = dropout(source_embedding(source));     // B×n×E
    const GRUOutput out = encoder(x, Var(), lengths);    // h̄ B×n×2H, h_n 2L×B×H
    enc.states = out.output;
    enc.mask = length_mask(lengths, source.size(1));     // B×n
    // The top layer's [h→ after the last real step ; h← after reading back to
    // position 0]: rows 2(L−1) and 2(L−1) + 1 of h_n.   B×2H
    const int64_t top = 2 * (config_.encoder_layers - 1);
    enc.summary = concat({squeeze(narrow(out.h_n, 0, top, 1), 0), squeeze(narrow(out.h_n, 0, top + 1, 1), 0)}, -1);
    if (bahdanau_) enc.memory = bahdanau_->precompute(enc.states, enc.mask);  // U_a h̄, once
    return enc;
}

DecoderState Seq2SeqModel::initial_state(const Encoded& enc) {
    DecoderState st;
    st.s = tanh(init(enc.summary));  // s_0 = tanh(W_init [h→; h←] + b)   B×S
    if (config_.input_feeding) st.feed = Var(Tensor::zeros(Shape{enc.states.size(0), feed_dim(config_)}));
    return st;
}

Seq2SeqModel::Attended Seq2SeqModel::attend_step(const Encoded& enc, const Var& s, int64_t t) {
    if (bahdanau_) {
        const AttentionOutput a = bahdanau_->step(s, enc.memory);  // c_t B×2H, α_t B×n
        return {concat({s, a.output}, -1), a.output, a.weights};
    }
    // h̃_t = tanh(W_c [c_t; s_t]), c_t = Σ_s a_ts h̄_s; local-m centres on p_t = t
    const LuongAttention::Output a = luong_->step(s, enc.states, enc.mask, t);
    return {a.output, a.output, a.weights};
}

StepOutput Seq2SeqModel::step(const Encoded& enc, const DecoderState& state, const Tensor& previous, int64_t t) {
    Var x = dropout(target_embedding(previous));                         // B×E
    if (config_.input_feeding) x = concat({x, state.feed}, -1);          // [emb(y_{t−1}); f_{t−1}]
    const Var s = decoder(x, state.s);                                   // s_t   B×S
    const Attended a = attend_step(enc, s, t);
    return {output(dropout(a.out)), a.weights, {s, a.feed}};             // logits B×V
}

Var Seq2SeqModel::forward(const Batch& batch, Tensor* weights) {
    const Encoded enc = encode(batch.source, batch.source_lengths);
    DecoderState state = initial_state(enc);
    std::vector<Var> logits, alphas;
    for (int64_t t = 0; t < batch.target_in.size(1); ++t) {
        StepOutput out = step(enc, state, column(batch.target_in, t), t);
        logits.push_back(out.logits);
        if (weights) alphas.push_back(out.weights);
        state = out.state;
    }
    if (weights) *weights = stack(alphas, 1).value();  // B×T×n
    return stack(logits, 1);                             // B×T×V
}

// ---- decoding ---------------------------------------------------------------------------

namespace {

// The encoder's output for the sources, and the decoder's state of each
// hypothesis under way (row k continues source rows[k]).
class RnnSession : public DecodingSession {
public:
    RnnSession(Seq2SeqModel& model, const Tensor& source, const std::vector<int64_t>& lengths)
        : model_(model), encoded_(model.encode(source, lengths)), state_(model.initial_state(encoded_)) {}

    NextToken step(const Tensor& previous) override {
        const StepOutput out = model_.step(encoded_, state_, previous, t_++);
        state_ = out.state;
        return {log_softmax(out.logits.value(), -1), out.weights.value()};
    }

    // Each hypothesis keeps its own row of the source's encoding and of the state.
    void select(const std::vector<int64_t>& rows) override {
        encoded_ = encoded_.select(rows);
        state_.s = index_select(state_.s, 0, rows);
        if (state_.feed.defined()) state_.feed = index_select(state_.feed, 0, rows);
    }

private:
    Seq2SeqModel& model_;
    Encoded encoded_;  // one row per hypothesis
    DecoderState state_;
    int64_t t_ = 0;
};

}  // namespace

std::unique_ptr<DecodingSession> Seq2SeqModel::start(const Tensor& source, const std::vector<int64_t>& lengths) {
    return std::make_unique<RnnSession>(*this, source, lengths);
}

}  // namespace attn::seq2seq
