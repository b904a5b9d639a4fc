// GRU and LSTM over sequences: the loop over layers, directions and time
// steps, with padding handled by masks.
#include "nn/rnn.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "autograd/ops.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

// The steps of a time-major T×B×F tensor: T variables of B×F (views, no copy).
std::vector<Var> unbind_steps(const Var& x) { return detail::unbind_rows(x); }

// Which sequences of the batch are still running at each step. Steps before
// min_len run every sequence (no mask needed); steps from max_len on run none;
// in between, active[t] (B×1) is 1 for the sequences with t < length and
// padded[t] = 1 − active[t].
struct StepMasks {
    int64_t min_len = 0, max_len = 0;
    std::vector<Tensor> active, padded;
};

StepMasks step_masks(const std::vector<int64_t>& lengths, int64_t batch, int64_t steps) {
    StepMasks m;
    m.min_len = m.max_len = steps;
    if (lengths.empty()) return m;
    m.min_len = *std::min_element(lengths.begin(), lengths.end());
    m.max_len = *std::max_element(lengths.begin(), lengths.end());
    m.active.resize(static_cast<size_t>(steps));
    m.padded.resize(static_cast<size_t>(steps));
    for (int64_t t = m.min_len; t < m.max_len; ++t) {
        Tensor active = Tensor::empty(Shape{batch, 1}), padded = Tensor::empty(Shape{batch, 1});
        for (int64_t b = 0; b < batch; ++b) {
            active[b] = t < lengths[static_cast<size_t>(b)] ? 1 : 0;
            padded[b] = 1 - active[b];
        }
        m.active[static_cast<size_t>(t)] = active;
        m.padded[static_cast<size_t>(t)] = padded;
    }
    return m;
}

// One direction of one layer over the whole sequence. x (stepwise mode) or gi
// (the input projections) is a time-major T×B×… tensor; the other is
// undefined. Returns the outputs T×B×H and the final state.
//
// A sequence that has ended keeps its state (h_t = h_{t−1}) and outputs zeros.
// The reverse direction walks t = max_len − 1, …, 0: a sequence of length L
// stays at its initial state until t = L − 1, so it starts at its own end.
template <class Step>
std::pair<Var, LSTMState> run_direction(const Var& x, const Var& gi, LSTMState state, bool reverse,
                                        const StepMasks& m, int64_t batch, int64_t hidden, Step&& step) {
    const std::vector<Var> xs = x.defined() ? unbind_steps(x) : std::vector<Var>{};
    const std::vector<Var> gis = gi.defined() ? unbind_steps(gi) : std::vector<Var>{};
    const int64_t steps = x.defined() ? x.size(0) : gi.size(0);
    std::vector<Var> outputs(static_cast<size_t>(steps), Var(Tensor::zeros(Shape{batch, hidden})));
    for (int64_t s = 0; s < m.max_len; ++s) {
        const size_t t = static_cast<size_t>(reverse ? m.max_len - 1 - s : s);
        LSTMState next = step(xs.empty() ? Var() : xs[t], gis.empty() ? Var() : gis[t], state);
        if (static_cast<int64_t>(t) >= m.min_len) {  // some sequences have ended: h_t = h_{t−1} there
            next.h = where(m.active[t], next.h, state.h);
            if (next.c.defined()) next.c = where(m.active[t], next.c, state.c);
            outputs[t] = masked_fill(next.h, m.padded[t], 0);
        } else {
            outputs[t] = next.h;
        }
        state = std::move(next);
    }
    return {stack(outputs, 0), std::move(state)};
}

// x·W_ihᵀ + b_ih for every step at once: T×B×F → T×B×G·H, one matmul.
Var input_projection(const Var& x, const RNNWeights& w) {
    const int64_t T = x.size(0), B = x.size(1);
    const Var flat = reshape(x, {T * B, x.size(2)});
    return reshape(affine(flat, w.w_ih, w.b_ih), {T, B, w.w_ih.size(0)});
}

// The L·D initial states (B×H each) from an L·D×B×H tensor, or zeros.
std::vector<Var> initial_states(const Var& s, int64_t count, int64_t batch, int64_t hidden) {
    if (s.defined()) return unbind_steps(s);
    return std::vector<Var>(static_cast<size_t>(count), Var(Tensor::zeros(Shape{batch, hidden})));
}

}  // namespace

// ---- RNNBase ---------------------------------------------------------------------------------

RNNBase::RNNBase(const char* name, int64_t gates, int64_t input_size, int64_t hidden_size, Generator& gen,
                 const RNNOptions& options)
    : name_(name),
      gates_(gates),
      input_size_(input_size),
      hidden_size_(hidden_size),
      options_(options),
      dropout_gen_(gen.fork()) {
    detail::check_sizes(name, input_size, hidden_size);
    if (options.num_layers < 1)
        throw std::invalid_argument(std::string(name) + ": num_layers must be at least 1, got " +
                                    std::to_string(options.num_layers));
    if (!(options.dropout >= 0 && options.dropout <= 1))
        throw std::invalid_argument(std::string(name) + ": dropout " + std::to_string(options.dropout) +
                                    " is not in [0, 1]");
    const int64_t D = directions(), G = gates * hidden_size;
    // PyTorch's order: for each layer, for each direction, w_ih, w_hh, b_ih, b_hh.
    for (int64_t l = 0; l < options.num_layers; ++l) {
        for (int64_t d = 0; d < D; ++d) {
            const std::string suffix = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
            const int64_t in = l == 0 ? input_size : D * hidden_size;
            RNNWeights w;
            w.w_ih = register_parameter("weight_ih" + suffix, detail::rnn_init(Shape{G, in}, hidden_size, gen));
            w.w_hh =
                register_parameter("weight_hh" + suffix, detail::rnn_init(Shape{G, hidden_size}, hidden_size, gen));
            if (options.bias) {
                w.b_ih = register_parameter("bias_ih" + suffix, detail::rnn_init(Shape{G}, hidden_size, gen));
                w.b_hh = register_parameter("bias_hh" + suffix, detail::rnn_init(Shape{G}, hidden_size, gen));
            }
            weights_.push_back(std::move(w));
        }
    }
}

const RNNWeights& RNNBase::weights(int64_t layer, int64_t direction) const {
    if (layer < 0 || layer >= num_layers() || direction < 0 || direction >= directions())
        throw std::out_of_range(std::string(name_) + ": no weights for layer " + std::to_string(layer) +
                                " direction " + std::to_string(direction) + " (the layer has " +
                                std::to_string(num_layers()) + " layers, " + std::to_string(directions()) +
                                " direction(s))");
    return weights_[static_cast<size_t>(layer * directions() + direction)];
}

// PyTorch's repr, e.g. "GRU(10, 16, num_layers=2, batch_first=True, bidirectional=True)".
std::string RNNBase::describe() const {
    std::ostringstream os;
    os << name_ << "(" << input_size_ << ", " << hidden_size_;
    if (options_.num_layers != 1) os << ", num_layers=" << options_.num_layers;
    if (!options_.bias) os << ", bias=False";
    os << ", batch_first=True";
    if (options_.dropout != 0) os << ", dropout=" << options_.dropout;
    if (options_.bidirectional) os << ", bidirectional=True";
    os << ")";
    return os.str();
}

void RNNBase::check_state(const char* which, const Var& s, int64_t batch) const {
    if (!s.defined()) return;
    const Shape want{num_layers() * directions(), batch, hidden_size_};
    if (s.shape() != want)
        throw std::invalid_argument(std::string(name_) + ": initial state " + which + " has shape " + s.shape().str() +
                                    " but the layer needs " + want.str() +
                                    " (num_layers·directions × batch × hidden)");
}

std::vector<int64_t> RNNBase::checked_lengths(const std::vector<int64_t>& lengths, int64_t batch,
                                              int64_t steps) const {
    if (lengths.empty()) return lengths;
    if (static_cast<int64_t>(lengths.size()) != batch)
        throw std::invalid_argument(std::string(name_) + ": lengths has " + std::to_string(lengths.size()) +
                                    " entries but the batch has " + std::to_string(batch) + " sequences");
    for (size_t b = 0; b < lengths.size(); ++b)
        if (lengths[b] < 0 || lengths[b] > steps)
            throw std::invalid_argument(std::string(name_) + ": length " + std::to_string(lengths[b]) +
                                        " of sequence " + std::to_string(b) + " is out of range [0, " +
                                        std::to_string(steps) + "]");
    return lengths;
}

LSTMOutput RNNBase::run(const Var& input, const LSTMState& initial, const std::vector<int64_t>& lengths) const {
    check_input(input);
    // After set_fast, a GRU runs each direction as one op (run_gru_sequences, below).
    if (mode == RnnMode::sequence && gates_ == 3) return run_gru_sequences(input, initial, lengths);
    const int64_t B = input.size(0), T = input.size(1), H = hidden_size_, L = num_layers(), D = directions();
    const bool has_cell = gates_ == 4;  // the LSTM carries c
    check_state("h0", initial.h, B);
    if (has_cell) check_state("c0", initial.c, B);
    const StepMasks masks = step_masks(checked_lengths(lengths, B, T), B, T);
    const std::vector<Var> h0 = initial_states(initial.h, L * D, B, H);
    const std::vector<Var> c0 = has_cell ? initial_states(initial.c, L * D, B, H) : std::vector<Var>{};

    Var layer_in = transpose(input, 0, 1);  // T×B×I, time-major: a step is one row block
    std::vector<Var> h_n, c_n;
    for (int64_t l = 0; l < L; ++l) {
        std::vector<Var> outputs;  // one T×B×H per direction
        for (int64_t d = 0; d < D; ++d) {
            const RNNWeights& w = weights(l, d);
            const size_t k = static_cast<size_t>(l * D + d);
            // stepwise: each step multiplies its own x_t; otherwise x·W_ihᵀ + b_ih for all steps at once
            const bool stepwise = mode == RnnMode::stepwise;
            auto [out, last] = run_direction(
                stepwise ? layer_in : Var(), stepwise ? Var() : input_projection(layer_in, w),
                LSTMState{h0[k], has_cell ? c0[k] : Var()}, d == 1, masks, B, H,
                [this, &w](const Var& x_t, const Var& gi_t, const LSTMState& s) { return step(x_t, gi_t, s, w); });
            outputs.push_back(std::move(out));
            h_n.push_back(last.h);
            if (has_cell) c_n.push_back(last.c);
        }
        layer_in = D == 2 ? concat(outputs, 2) : outputs[0];  // T×B×D·H = [forward | backward]
        if (l + 1 < L) layer_in = between_layers(layer_in);
    }
    return {transpose(layer_in, 0, 1), stack(h_n, 0), has_cell ? stack(c_n, 0) : Var()};  // output B×T×D·H
}

// The GRU's sequence mode (set_fast): each direction one op, gru_sequence_fused,
// whose (T+1)×B×H result holds the outputs and, in row T, the final state;
// join_directions makes the layer's output from them in one copy (batch first
// after the last layer), where run narrows, concatenates and transposes.
LSTMOutput RNNBase::run_gru_sequences(const Var& input, const LSTMState& initial,
                                      const std::vector<int64_t>& lengths) const {
    const int64_t B = input.size(0), T = input.size(1), H = hidden_size_, L = num_layers(), D = directions();
    check_state("h0", initial.h, B);
    checked_lengths(lengths, B, T);  // (gru_sequence_fused reads them as given)
    const std::vector<Var> h0 = initial_states(initial.h, L * D, B, H);
    Var layer_in = transpose(input, 0, 1);  // T×B×I
    std::vector<Var> h_n;
    for (int64_t l = 0; l < L; ++l) {
        std::vector<Var> outputs;  // one (T+1)×B×H per direction
        for (int64_t d = 0; d < D; ++d) {
            const RNNWeights& w = weights(l, d);
            const Var all = gru_sequence_fused(input_projection(layer_in, w), w.w_hh, w.b_hh,
                                               h0[static_cast<size_t>(l * D + d)], lengths, d == 1);
            outputs.push_back(all);
            h_n.push_back(reshape(narrow(all, 0, T, 1), Shape{B, H}));
        }
        const bool last = l + 1 == L;
        layer_in = join_directions(outputs, T, /*batch_first=*/last);  // [forward | backward]
        if (!last) layer_in = between_layers(layer_in);
    }
    return {layer_in, stack(h_n, 0), Var()};
}

// Dropout on the outputs of every layer but the last (training only).
Var RNNBase::between_layers(const Var& x) const {
    return dropout(x, options_.dropout, external_dropout_gen_ ? *external_dropout_gen_ : dropout_gen_, is_training());
}

void RNNBase::check_input(const Var& input) const {
    if (!input.defined()) throw std::invalid_argument(std::string(name_) + ": the input is undefined");
    if (input.rank() != 3)
        throw std::invalid_argument(std::string(name_) + ": input must be B×T×I (rank 3, batch first), got " +
                                    input.shape().str());
    if (input.size(2) != input_size_)
        throw std::invalid_argument(std::string(name_) + ": input " + input.shape().str() + " has " +
                                    std::to_string(input.size(2)) + " features but the layer expects " +
                                    std::to_string(input_size_));
    if (input.size(0) == 0 || input.size(1) == 0)
        throw std::invalid_argument(std::string(name_) + ": input " + input.shape().str() + " is empty");
}

// ---- GRU -------------------------------------------------------------------------------------------

GRU::GRU(int64_t input_size, int64_t hidden_size, Generator& gen, const RNNOptions& options)
    : RNNBase("GRU", 3, input_size, hidden_size, gen, options) {}

GRUOutput GRU::forward(const Var& input, const Var& h0, const std::vector<int64_t>& lengths) const {
    LSTMOutput out = run(input, LSTMState{h0, Var()}, lengths);
    return {std::move(out.output), std::move(out.h_n)};
}

LSTMState GRU::step(const Var& x_t, const Var& gi_t, const LSTMState& state, const RNNWeights& w) const {
    if (mode == RnnMode::stepwise) return {gru_cell(x_t, state.h, w.w_ih, w.w_hh, w.b_ih, w.b_hh), Var()};
    const Var gh = affine(state.h, w.w_hh, w.b_hh);  // h_{t−1}·W_hhᵀ + b_hh, B×3H
    return {mode == RnnMode::fused ? gru_gates_fused(gi_t, gh, state.h) : gru_gates(gi_t, gh, state.h), Var()};
}

// ---- LSTM ------------------------------------------------------------------------------------------

LSTM::LSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const RNNOptions& options)
    : RNNBase("LSTM", 4, input_size, hidden_size, gen, options) {}

LSTMOutput LSTM::forward(const Var& input, const LSTMState& initial, const std::vector<int64_t>& lengths) const {
    return run(input, initial, lengths);
}

LSTMState LSTM::step(const Var& x_t, const Var& gi_t, const LSTMState& state, const RNNWeights& w) const {
    if (mode == RnnMode::stepwise) return lstm_cell(x_t, state, w.w_ih, w.w_hh, w.b_ih, w.b_hh);
    const Var pre = gi_t + affine(state.h, w.w_hh, w.b_hh);  // B×4H
    const bool fused = mode == RnnMode::fused || mode == RnnMode::sequence;  // no sequence op for the LSTM
    return fused ? lstm_gates_fused(pre, state.c) : lstm_gates(pre, state.c);
}

}  // namespace attn
