// GRU and LSTM steps: the composed gates (the formulas) and the two cell
// modules. The fused gates, with their hand-written backward, are in
// nn/rnn_cell_fast.cpp.
#include "nn/rnn_cell.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

const char* to_string(RnnMode mode) {
    switch (mode) {
        case RnnMode::stepwise: return "stepwise";
        case RnnMode::precomputed: return "precomputed";
        case RnnMode::fused: return "fused";
        case RnnMode::sequence: return "sequence";
    }
    return "unknown";
}

// gi, gh B×G·H and the state s B×H, as the gate functions need them.
void detail::check_gate_inputs(const char* op, const Var* gi, const Var* gh, const Var& s, int64_t gates) {
    if (s.rank() != 2)
        throw std::invalid_argument(std::string(op) + ": state must be B×H (rank 2), got " + s.shape().str());
    const Shape want{s.size(0), gates * s.size(1)};
    for (const Var* g : {gi, gh})
        if (g && g->shape() != want)
            throw std::invalid_argument(std::string(op) + ": gate pre-activations " + g->shape().str() + " should be " +
                                        want.str() + " (batch × " + std::to_string(gates) + "·hidden) for a state " +
                                        s.shape().str());
}

namespace {

Var zeros_state(int64_t batch, int64_t hidden) { return Var(Tensor::zeros(Shape{batch, hidden})); }

}  // namespace

// ---- the projections -------------------------------------------------------------------

Var affine(const Var& x, const Var& w, const Var& b) {
    Var y = matmul(x, w, false, true);  // x·Wᵀ, the transpose is the GEMM's flag
    return b.defined() ? y + b : y;
}

// ---- GRU gates -------------------------------------------------------------------------

Var gru_gates(const Var& gi, const Var& gh, const Var& h) {
    detail::check_gate_inputs("gru_gates", &gi, &gh, h, 3);
    const int64_t H = h.size(1);
    const std::vector<Var> i = split(gi, {H, H, H}, 1);   // W_i· x + b_i·  for r, z, n
    const std::vector<Var> hh = split(gh, {H, H, H}, 1);  // W_h· h + b_h·  for r, z, n
    const Var r = sigmoid(i[0] + hh[0]);                  // r = σ(gi_r + gh_r)
    const Var z = sigmoid(i[1] + hh[1]);                  // z = σ(gi_z + gh_z)
    const Var n = tanh(i[2] + r * hh[2]);                 // n = tanh(gi_n + r ⊙ gh_n)
    return (1 - z) * n + z * h;                           // h' = (1 − z) ⊙ n + z ⊙ h
}

// ---- LSTM gates ----------------------------------------------------------------------------

LSTMState lstm_gates(const Var& pre, const Var& c) {
    detail::check_gate_inputs("lstm_gates", &pre, nullptr, c, 4);
    const int64_t H = c.size(1);
    const std::vector<Var> p = split(pre, {H, H, H, H}, 1);  // [i | f | g | o]
    const Var i = sigmoid(p[0]);                              // input gate
    const Var f = sigmoid(p[1]);                              // forget gate
    const Var g = tanh(p[2]);                                 // candidate
    const Var o = sigmoid(p[3]);                              // output gate
    const Var c_next = f * c + i * g;                         // c' = f ⊙ c + i ⊙ g
    return {o * tanh(c_next), c_next};                        // h' = o ⊙ tanh(c')
}

// ---- whole steps ------------------------------------------------------------------------------

Var gru_cell(const Var& x, const Var& h, const Var& w_ih, const Var& w_hh, const Var& b_ih, const Var& b_hh,
             bool fused) {
    const Var gi = affine(x, w_ih, b_ih);  // B×3H
    const Var gh = affine(h, w_hh, b_hh);  // B×3H
    return fused ? gru_gates_fused(gi, gh, h) : gru_gates(gi, gh, h);
}

LSTMState lstm_cell(const Var& x, const LSTMState& state, const Var& w_ih, const Var& w_hh, const Var& b_ih,
                    const Var& b_hh, bool fused) {
    const Var pre = affine(x, w_ih, b_ih) + affine(state.h, w_hh, b_hh);  // B×4H
    return fused ? lstm_gates_fused(pre, state.c) : lstm_gates(pre, state.c);
}

// ---- shape checks --------------------------------------------------------------------------------

namespace detail {

// z_t = x[t] (a view)                  ∂L/∂x[t] += g_t
std::vector<Var> unbind_rows(const Var& x) {
    const ProfileScope scope("unbind_rows");
    if (x.rank() < 1) throw std::invalid_argument("unbind_rows: needs rank >= 1, got a scalar");
    const Shape row_shape = x.shape().without(0);
    std::vector<Var> rows;
    rows.reserve(static_cast<size_t>(x.size(0)));
    for (int64_t t = 0; t < x.size(0); ++t)
        rows.push_back(record("unbind_rows", x.value().rows(t, t + 1).reshape(row_shape), {x}, [t](Backward& bw) {
            Tensor block = bw.grad_buffer(0).rows(t, t + 1).reshape(bw.grad().shape());  // a view into ∂L/∂x
            add_(block, bw.grad());
        }));
    return rows;
}

void check_cell_input(const char* layer, const Var& x, int64_t input_size) {
    if (!x.defined()) throw std::invalid_argument(std::string(layer) + ": the input is undefined");
    if (x.rank() != 2)
        throw std::invalid_argument(std::string(layer) + ": input must be B×I (rank 2), got " + x.shape().str());
    if (x.size(1) != input_size)
        throw std::invalid_argument(std::string(layer) + ": input " + x.shape().str() + " has " +
                                    std::to_string(x.size(1)) + " features but the cell expects " +
                                    std::to_string(input_size));
}

void check_cell_state(const char* layer, const char* name, const Var& s, int64_t batch, int64_t hidden_size) {
    const Shape want{batch, hidden_size};
    if (s.shape() != want)
        throw std::invalid_argument(std::string(layer) + ": state " + name + " has shape " + s.shape().str() +
                                    " but the cell needs " + want.str() + " (batch × hidden)");
}

void check_sizes(const char* layer, int64_t input_size, int64_t hidden_size) {
    if (input_size <= 0 || hidden_size <= 0)
        throw std::invalid_argument(std::string(layer) + ": input_size and hidden_size must be positive, got " +
                                    std::to_string(input_size) + " and " + std::to_string(hidden_size));
}

// U(−1/√H, 1/√H), PyTorch's initialisation of every RNN weight and bias.
Tensor rnn_init(const Shape& shape, int64_t hidden, Generator& gen) {
    Tensor t = Tensor::empty(shape);
    init::uniform_fan_in_(t, hidden, gen);
    return t;
}

}  // namespace detail

namespace {

std::string cell_description(const char* layer, int64_t in, int64_t hidden, bool bias) {
    return std::string(layer) + "(" + std::to_string(in) + ", " + std::to_string(hidden) +
           (bias ? "" : ", bias=False") + ")";
}

}  // namespace

// ---- GRUCell ----------------------------------------------------------------------------------------

GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, Generator& gen, bool bias)
    : input_size_(input_size), hidden_size_(hidden_size) {
    detail::check_sizes("GRUCell", input_size, hidden_size);
    const int64_t G = 3 * hidden_size;
    weight_ih = register_parameter("weight_ih", detail::rnn_init(Shape{G, input_size}, hidden_size, gen));
    weight_hh = register_parameter("weight_hh", detail::rnn_init(Shape{G, hidden_size}, hidden_size, gen));
    if (bias) {
        bias_ih = register_parameter("bias_ih", detail::rnn_init(Shape{G}, hidden_size, gen));
        bias_hh = register_parameter("bias_hh", detail::rnn_init(Shape{G}, hidden_size, gen));
    }
}

Var GRUCell::forward(const Var& x, const Var& h) const {
    detail::check_cell_input("GRUCell", x, input_size_);
    const int64_t B = x.size(0);
    const Var h0 = h.defined() ? h : zeros_state(B, hidden_size_);
    detail::check_cell_state("GRUCell", "h", h0, B, hidden_size_);
    return gru_cell(x, h0, weight_ih, weight_hh, bias_ih, bias_hh, fused);
}

std::string GRUCell::describe() const {
    return cell_description("GRUCell", input_size_, hidden_size_, bias_ih.defined());
}

// ---- LSTMCell ---------------------------------------------------------------------------------------

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, Generator& gen, bool bias)
    : input_size_(input_size), hidden_size_(hidden_size) {
    detail::check_sizes("LSTMCell", input_size, hidden_size);
    const int64_t G = 4 * hidden_size;
    weight_ih = register_parameter("weight_ih", detail::rnn_init(Shape{G, input_size}, hidden_size, gen));
    weight_hh = register_parameter("weight_hh", detail::rnn_init(Shape{G, hidden_size}, hidden_size, gen));
    if (bias) {
        bias_ih = register_parameter("bias_ih", detail::rnn_init(Shape{G}, hidden_size, gen));
        bias_hh = register_parameter("bias_hh", detail::rnn_init(Shape{G}, hidden_size, gen));
    }
}

LSTMState LSTMCell::forward(const Var& x, const LSTMState& state) const {
    detail::check_cell_input("LSTMCell", x, input_size_);
    const int64_t B = x.size(0);
    const LSTMState s{state.h.defined() ? state.h : zeros_state(B, hidden_size_),
                      state.c.defined() ? state.c : zeros_state(B, hidden_size_)};
    detail::check_cell_state("LSTMCell", "h", s.h, B, hidden_size_);
    detail::check_cell_state("LSTMCell", "c", s.c, B, hidden_size_);
    return lstm_cell(x, s, weight_ih, weight_hh, bias_ih, bias_hh, fused);
}

std::string LSTMCell::describe() const {
    return cell_description("LSTMCell", input_size_, hidden_size_, bias_ih.defined());
}

}  // namespace attn
