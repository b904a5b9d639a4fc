#include "examples/seq2seq/transformer_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "attention/multi_head.hpp"
#include "attention/position.hpp"
#include "examples/seq2seq/config_text.hpp"
#include "autograd/ops.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn::seq2seq {

// ---- configuration ---------------------------------------------------------------------

std::string TransformerConfig::str() const {
    std::ostringstream s;
    s << "model=transformer source_vocab=" << source_vocab << " target_vocab=" << target_vocab
      << " d_model=" << d_model << " heads=" << heads << " layers=" << layers << " ffn=" << ffn
      << " dropout=" << dropout << " tie_output=" << (tie_output ? 1 : 0);
    if (right_to_left) s << " output=right-to-left";  // only when set, so a left-to-right model reads as before
    return s.str();
}

TransformerConfig TransformerConfig::parse(const std::string& text) {
    const std::string who = "seq2seq transformer config";
    TransformerConfig c;
    for (const auto& [key, value] : config_items(text, who)) {
        auto number = [&, &key = key, &value = value] { return config_size(who, key, value); };
        if (key == "model") {
            if (value != "transformer") throw std::runtime_error(who + ": model=" + value + " is not a transformer");
        } else if (key == "source_vocab") c.source_vocab = number();
        else if (key == "target_vocab") c.target_vocab = number();
        else if (key == "d_model") c.d_model = number();
        else if (key == "heads") c.heads = number();
        else if (key == "layers") c.layers = number();
        else if (key == "ffn") c.ffn = number();
        else if (key == "tie_output") {
            if (value != "0" && value != "1") throw std::runtime_error(who + ": tie_output=" + value + " is not 0 or 1");
            c.tie_output = value == "1";
        } else if (key == "dropout") c.dropout = config_probability(who, key, value);
        else if (key == "output") c.right_to_left = config_direction(who, key, value);
        else throw std::runtime_error(who + ": unknown key '" + key + "'");
    }
    c.check();
    return c;
}

void TransformerConfig::check() const {
    auto positive = [](const char* flag, int64_t v) {
        if (v <= 0) throw std::invalid_argument(std::string("seq2seq transformer: ") + flag + " must be > 0, got " +
                                                std::to_string(v));
    };
    positive("--d-model", d_model), positive("--heads", heads), positive("--layers", layers);
    positive("--ffn", ffn), positive("the source vocabulary", source_vocab);
    positive("the target vocabulary", target_vocab);
    if (d_model % heads != 0)
        throw std::invalid_argument("seq2seq transformer: --d-model " + std::to_string(d_model) +
                                    " must be divisible by --heads " + std::to_string(heads) +
                                    " (each head has d_model / heads columns)");
    if (d_model % 2 != 0)
        throw std::invalid_argument("seq2seq transformer: --d-model " + std::to_string(d_model) +
                                    " must be even (the sinusoidal positions come in sin/cos pairs)");
    if (!(dropout >= 0 && dropout < 1))
        throw std::invalid_argument("seq2seq transformer: --dropout must be in [0, 1), got " + std::to_string(dropout));
}

namespace {

const TransformerConfig& checked(const TransformerConfig& c) {
    c.check();
    return c;
}

// E ~ N(0, 1/d), the padding row 0: with the √d of embed() the inputs have unit-variance entries.
void scaled_init(Embedding& e, int64_t d, Generator& gen) {
    init::normal_(e.weight.value(), 0, real(1) / std::sqrt(static_cast<real>(d)), gen);
    if (e.padding_idx()) e.weight.value().rows(*e.padding_idx(), *e.padding_idx() + 1).fill_(0);
}

// The heads' mean of the last layer's weights, B×h×T×n → B×T×n (undefined when not materialised).
Tensor mean_over_heads(const Var& weights) {
    if (!weights.defined()) return {};
    return mean(weights.value(), 1);
}

}  // namespace

Tensor target_padding(const Tensor& target_in) {
    const int64_t B = target_in.size(0), T = target_in.size(1);
    Tensor keep = Tensor::zeros(Shape{B, T});
    for (int64_t b = 0; b < B; ++b) {
        int64_t last = -1;
        for (int64_t t = 0; t < T; ++t)
            if (target_in[b * T + t] != static_cast<real>(kPad)) last = t;
        for (int64_t t = 0; t <= last; ++t) keep[b * T + t] = 1;
    }
    return keep;
}

// ---- the model ---------------------------------------------------------------------------

TransformerSeq2Seq::TransformerSeq2Seq(const TransformerConfig& config, Generator& gen)
    : source_embedding(checked(config).source_vocab, config.d_model, gen, kPad),
      target_embedding(config.target_vocab, config.d_model, gen, kPad),
      dropout(static_cast<real>(config.dropout), gen),
      config_(config) {
    scaled_init(source_embedding, config_.d_model, gen);
    scaled_init(target_embedding, config_.d_model, gen);
    TransformerLayerOptions layer;
    layer.dropout = static_cast<real>(config_.dropout);
    for (int64_t i = 0; i < config_.layers; ++i) {
        encoder.push_back(std::make_unique<TransformerEncoderLayer>(config_.d_model, config_.heads, config_.ffn, gen, layer));
        encoder_layers_.add(std::to_string(i), *encoder.back());
    }
    for (int64_t i = 0; i < config_.layers; ++i) {
        decoder.push_back(std::make_unique<TransformerDecoderLayer>(config_.d_model, config_.heads, config_.ffn, gen, layer));
        decoder_layers_.add(std::to_string(i), *decoder.back());
    }
    if (!config_.tie_output) output = std::make_unique<Linear>(config_.d_model, config_.target_vocab, gen);
    // state_dict names as torch.nn.Transformer's: encoder.layers.0.self_attn…, decoder.layers.0.multihead_attn…
    encoder_stack_.add("layers", encoder_layers_);
    decoder_stack_.add("layers", decoder_layers_);
    register_module("source_embedding", source_embedding);
    register_module("target_embedding", target_embedding);
    register_module("encoder", encoder_stack_);
    register_module("decoder", decoder_stack_);
    if (output) register_module("output", *output);
    register_module("dropout", dropout);  // no parameters
}

TransformerSeq2Seq::~TransformerSeq2Seq() = default;

std::string TransformerSeq2Seq::describe() const { return "TransformerSeq2Seq(" + config_.str() + ")"; }

Var TransformerSeq2Seq::embed(const Embedding& embedding, const Tensor& ids) {
    // E[ids]·√d + PE (entry 46), then dropout                             B×L×d
    const Var x = embedding(ids) * std::sqrt(static_cast<real>(config_.d_model));
    return dropout(add_sinusoidal_position_encoding(x));
}

TransformerSeq2Seq::Memory TransformerSeq2Seq::encode(const Tensor& source, const std::vector<int64_t>& lengths) {
    Memory m;
    m.padding = length_mask(lengths, source.size(1));  // B×n
    const Tensor keep = key_mask(m.padding);           // B×1×n: no query sees a padded source
    Var x = embed(source_embedding, source);           // B×n×d
    for (auto& layer : encoder) {
        const AttentionOutput out = layer->forward(x, keep);
        x = out.output;
        m.self_weights.push_back(out.weights);
    }
    m.states = x;
    return m;
}

TransformerSeq2Seq::Memory TransformerSeq2Seq::Memory::select(const std::vector<int64_t>& rows) const {
    return {index_select(states, 0, rows), attn::index_select(padding, 0, rows), {}};
}

TransformerSeq2Seq::Decoded TransformerSeq2Seq::decode(const Tensor& target_in, const Memory& memory) {
    Decoded d;
    const Tensor padding = target_padding(target_in);  // B×T
    Var y = embed(target_embedding, target_in);        // B×T×d
    for (auto& layer : decoder) {
        const TransformerDecoderLayer::Output out = layer->forward(y, memory.states, padding, memory.padding);
        y = out.output;
        d.self_weights.push_back(out.self_weights);
        d.cross_weights.push_back(out.cross_weights);
    }
    // logits = Y E_tᵀ (tied) or Y W_outᵀ + b                              B×T×V
    d.logits = output ? (*output)(y) : matmul(y, target_embedding.weight, false, true);
    return d;
}

Var TransformerSeq2Seq::forward(const Batch& batch, Tensor* weights) {
    const Decoded d = decode(batch.target_in, encode(batch.source, batch.source_lengths));
    if (weights) *weights = mean_over_heads(d.cross_weights.back());  // B×T×n
    return d.logits;
}

TransformerSeq2Seq::AttentionMaps TransformerSeq2Seq::attention_maps(const Batch& batch) {
    NoGradGuard no_grad;
    const Memory m = encode(batch.source, batch.source_lengths);
    const Decoded d = decode(batch.target_in, m);
    AttentionMaps maps;
    for (const Var& w : m.self_weights) maps.encoder_self.push_back(w.defined() ? w.value() : Tensor());
    for (const Var& w : d.self_weights) maps.decoder_self.push_back(w.defined() ? w.value() : Tensor());
    for (const Var& w : d.cross_weights) maps.cross.push_back(w.defined() ? w.value() : Tensor());
    return maps;
}

// ---- decoding ----------------------------------------------------------------------------

namespace {

// The memory of the sources, and the tokens each hypothesis under way has been
// fed (<s> first); every step runs the decoder over all of them again and
// reads the last position.
class TransformerSession : public DecodingSession {
public:
    TransformerSession(TransformerSeq2Seq& model, const Tensor& source, const std::vector<int64_t>& lengths)
        : model_(model), memory_(model.encode(source, lengths)), fed_(static_cast<size_t>(source.size(0))) {}

    NextToken step(const Tensor& previous) override {
        const int64_t K = static_cast<int64_t>(fed_.size());
        for (int64_t k = 0; k < K; ++k) fed_[static_cast<size_t>(k)].push_back(previous[k]);
        const int64_t T = static_cast<int64_t>(fed_[0].size());
        Tensor target_in = Tensor::empty(Shape{K, T});
        for (int64_t k = 0; k < K; ++k)
            for (int64_t t = 0; t < T; ++t) target_in[k * T + t] = fed_[static_cast<size_t>(k)][static_cast<size_t>(t)];
        const TransformerSeq2Seq::Decoded d = model_.decode(target_in, memory_);
        // the last position's logits K×V and cross-attention K×n (the last layer, the heads' mean)
        const Tensor logits = squeeze(slice(d.logits.value(), 1, T - 1, T), 1);
        const Tensor cross = mean_over_heads(d.cross_weights.back());
        const Tensor weights =
            cross.defined() ? squeeze(slice(cross, 1, T - 1, T), 1) : Tensor::zeros(Shape{K, memory_.states.size(1)});
        return {log_softmax(logits, -1), weights};
    }

    // Each hypothesis keeps its own row of the memory and its own tokens.
    void select(const std::vector<int64_t>& rows) override {
        std::vector<std::vector<real>> fed;
        for (int64_t r : rows) fed.push_back(fed_.at(static_cast<size_t>(r)));
        fed_ = std::move(fed);
        memory_ = memory_.select(rows);
    }

private:
    TransformerSeq2Seq& model_;
    TransformerSeq2Seq::Memory memory_;   // one row per hypothesis
    std::vector<std::vector<real>> fed_;  // per hypothesis: <s> and the tokens written so far
};

}  // namespace

std::unique_ptr<DecodingSession> TransformerSeq2Seq::start(const Tensor& source, const std::vector<int64_t>& lengths) {
    return std::make_unique<TransformerSession>(*this, source, lengths);
}

}  // namespace attn::seq2seq
