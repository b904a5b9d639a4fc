// GRU and LSTM steps: the composed gates, the fused gates with their
// hand-written backward, and the two cell modules.
#include "nn/rnn_cell.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "nn/init.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
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

namespace {

// gi, gh B×G·H and the state s B×H, as the gate functions need them.
void check_gate_inputs(const char* op, const Var* gi, const Var* gh, const Var& s, int64_t gates) {
    if (s.rank() != 2)
        throw std::invalid_argument(std::string(op) + ": state must be B×H (rank 2), got " + s.shape().str());
    const Shape want{s.size(0), gates * s.size(1)};
    for (const Var* g : {gi, gh})
        if (g && g->shape() != want)
            throw std::invalid_argument(std::string(op) + ": gate pre-activations " + g->shape().str() + " should be " +
                                        want.str() + " (batch × " + std::to_string(gates) + "·hidden) for a state " +
                                        s.shape().str());
}

Var zeros_state(int64_t batch, int64_t hidden) { return Var(Tensor::zeros(Shape{batch, hidden})); }

}  // namespace

// ---- the projections -------------------------------------------------------------------

Var affine(const Var& x, const Var& w, const Var& b) {
    Var y = matmul(x, w, false, true);  // x·Wᵀ, the transpose is the GEMM's flag
    return b.defined() ? y + b : y;
}

// ---- GRU gates -------------------------------------------------------------------------

Var gru_gates(const Var& gi, const Var& gh, const Var& h) {
    check_gate_inputs("gru_gates", &gi, &gh, h, 3);
    const int64_t H = h.size(1);
    const std::vector<Var> i = split(gi, {H, H, H}, 1);   // W_i· x + b_i·  for r, z, n
    const std::vector<Var> hh = split(gh, {H, H, H}, 1);  // W_h· h + b_h·  for r, z, n
    const Var r = sigmoid(i[0] + hh[0]);                  // r = σ(gi_r + gh_r)
    const Var z = sigmoid(i[1] + hh[1]);                  // z = σ(gi_z + gh_z)
    const Var n = tanh(i[2] + r * hh[2]);                 // n = tanh(gi_n + r ⊙ gh_n)
    return (1 - z) * n + z * h;                           // h' = (1 − z) ⊙ n + z ⊙ h
}

// One row of the fused gates (the vector kernels of tensor/fast_math.hpp run
// over a whole row at once): rzn ← [r | z | n], out ← h'.
void detail::gru_gates_row(const real* gi, const real* gh, const real* h, int64_t H, real* rzn, real* out) {
    for (int64_t j = 0; j < 2 * H; ++j) rzn[j] = gi[j] + gh[j];  // [r | z] = σ(gi + gh)
    sigmoid_into(rzn, rzn, 2 * H);
    for (int64_t j = 0; j < H; ++j) rzn[2 * H + j] = gi[2 * H + j] + rzn[j] * gh[2 * H + j];
    tanh_into(rzn + 2 * H, rzn + 2 * H, H);  // n = tanh(gi_n + r ⊙ gh_n)
    for (int64_t j = 0; j < H; ++j) {
        const real z = rzn[H + j], n = rzn[2 * H + j];
        out[j] = (1 - z) * n + z * h[j];
    }
}

// Its backward, g = ∂L/∂h' (formulas below, at gru_gates_fused).
void detail::gru_gates_row_backward(const real* g, const real* rzn, const real* gh_n, const real* h, int64_t H,
                                    real* dgi, real* dgh, real* dh) {
    for (int64_t j = 0; j < H; ++j) {
        const real r = rzn[j], z = rzn[H + j], n = rzn[2 * H + j];
        const real dn = g[j] * (1 - z) * (1 - n * n);
        const real dz = g[j] * (h[j] - n) * z * (1 - z);
        const real dr = dn * gh_n[j] * r * (1 - r);
        dgi[j] = dgh[j] = dr;
        dgi[H + j] = dgh[H + j] = dz;
        dgi[2 * H + j] = dn;
        dgh[2 * H + j] = dn * r;
        dh[j] = g[j] * z;
    }
}

// The same in one op. Forward keeps r, z, n (B×3H) for backward, which is,
// with g = ∂L/∂h':
//   ∂L/∂h     = g ⊙ z
//   δn = g ⊙ (1 − z) ⊙ (1 − n²)              (through tanh)
//   δz = g ⊙ (h − n) ⊙ z ⊙ (1 − z)           (through σ)
//   δr = δn ⊙ gh_n ⊙ r ⊙ (1 − r)
//   ∂L/∂gi = [δr | δz | δn]      ∂L/∂gh = [δr | δz | δn ⊙ r]
Var gru_gates_fused(const Var& gi, const Var& gh, const Var& h) {
    const ProfileScope scope("gru_gates");
    check_gate_inputs("gru_gates_fused", &gi, &gh, h, 3);
    const int64_t B = h.size(0), H = h.size(1);
    Tensor rzn = Tensor::empty(Shape{B, 3 * H});
    Tensor out = Tensor::empty(Shape{B, H});
    const real *gi_v = gi.value().data(), *gh_v = gh.value().data(), *h_v = h.value().data();
    real *rzn_v = rzn.data(), *out_v = out.data();
    // Rows in parallel (each reads and writes only its own row); the same
    // split as the product that wrote gh, so at 2 threads each core mostly
    // reads rows it wrote itself (docs/performance.md, "W3 on two threads").
    parallel_for(0, B, parallel_grain(3 * H), [=](int64_t b_begin, int64_t b_end) {
        for (int64_t b = b_begin; b < b_end; ++b)
            detail::gru_gates_row(gi_v + b * 3 * H, gh_v + b * 3 * H, h_v + b * H, H, rzn_v + b * 3 * H, out_v + b * H);
    });
    return record("gru_gates", std::move(out), {gi, gh, h},
                  [rzn, gh = gh.value(), h = h.value(), B, H](Backward& bw) {
                      Tensor dgi = Tensor::empty(Shape{B, 3 * H}), dgh = Tensor::empty(Shape{B, 3 * H});
                      Tensor dh = Tensor::empty(Shape{B, H});
                      const real *g_rows = bw.grad().data(), *rzn_rows = rzn.data(), *gh_rows = gh.data(), *h_rows = h.data();
                      real *dgi_rows = dgi.data(), *dgh_rows = dgh.data(), *dh_rows = dh.data();
                      parallel_for(0, B, parallel_grain(3 * H), [=](int64_t b_begin, int64_t b_end) {
                          for (int64_t b = b_begin; b < b_end; ++b)
                              detail::gru_gates_row_backward(g_rows + b * H, rzn_rows + b * 3 * H,
                                                             gh_rows + b * 3 * H + 2 * H, h_rows + b * H, H,
                                                             dgi_rows + b * 3 * H, dgh_rows + b * 3 * H,
                                                             dh_rows + b * H);
                      });
                      if (bw.needs(0)) bw.accumulate(0, std::move(dgi));
                      if (bw.needs(1)) bw.accumulate(1, std::move(dgh));
                      if (bw.needs(2)) bw.accumulate(2, std::move(dh));
                  });
}

// ---- LSTM gates ----------------------------------------------------------------------------

LSTMState lstm_gates(const Var& pre, const Var& c) {
    check_gate_inputs("lstm_gates", &pre, nullptr, c, 4);
    const int64_t H = c.size(1);
    const std::vector<Var> p = split(pre, {H, H, H, H}, 1);  // [i | f | g | o]
    const Var i = sigmoid(p[0]);                              // input gate
    const Var f = sigmoid(p[1]);                              // forget gate
    const Var g = tanh(p[2]);                                 // candidate
    const Var o = sigmoid(p[3]);                              // output gate
    const Var c_next = f * c + i * g;                         // c' = f ⊙ c + i ⊙ g
    return {o * tanh(c_next), c_next};                        // h' = o ⊙ tanh(c')
}

// The same in one op, whose output is h' and c' stacked (2×B×H), then
// unbound into two views (no copy).
// Forward keeps i, f, g, o (B×4H) and tanh(c') (B×H). Backward, with
// g_h = ∂L/∂h' and g_c = ∂L/∂c':
//   δc = g_c + g_h ⊙ o ⊙ (1 − tanh²c')        (c' reaches L directly and through h')
//   ∂L/∂c = δc ⊙ f
//   ∂L/∂pre = [δc ⊙ g ⊙ i(1−i) | δc ⊙ c ⊙ f(1−f) | δc ⊙ i ⊙ (1−g²) | g_h ⊙ tanh c' ⊙ o(1−o)]
LSTMState lstm_gates_fused(const Var& pre, const Var& c) {
    const ProfileScope scope("lstm_gates");
    check_gate_inputs("lstm_gates_fused", &pre, nullptr, c, 4);
    const int64_t B = c.size(0), H = c.size(1);
    Tensor ifgo = Tensor::empty(Shape{B, 4 * H});
    Tensor tanh_c = Tensor::empty(Shape{B, H});
    Tensor out = Tensor::empty(Shape{2, B, H});  // [h'; c']
    for (int64_t b = 0; b < B; ++b) {
        const real* p = pre.value().data() + b * 4 * H;
        const real* cv = c.value().data() + b * H;
        real* a = ifgo.data() + b * 4 * H;
        real* t = tanh_c.data() + b * H;
        real* o = out.data() + b * H;  // h' row b; c' row b is B·H further
        // [i | f] = σ(·), g = tanh(·), o = σ(·), each a whole row at once
        sigmoid_into(p, a, 2 * H);
        tanh_into(p + 2 * H, a + 2 * H, H);
        sigmoid_into(p + 3 * H, a + 3 * H, H);
        for (int64_t j = 0; j < H; ++j) o[B * H + j] = a[H + j] * cv[j] + a[j] * a[2 * H + j];  // c' = f c + i g
        tanh_into(o + B * H, t, H);
        for (int64_t j = 0; j < H; ++j) o[j] = a[3 * H + j] * t[j];  // h' = o ⊙ tanh c'

    }
    Var hc = record("lstm_gates", std::move(out), {pre, c}, [ifgo, tanh_c, c = c.value(), B, H](Backward& bw) {
        Tensor dpre = Tensor::empty(Shape{B, 4 * H}), dc_prev = Tensor::empty(Shape{B, H});
        for (int64_t b = 0; b < B; ++b) {
            const real* gh = bw.grad().data() + b * H;
            const real* gc = gh + B * H;
            const real* a = ifgo.data() + b * 4 * H;
            const real* t = tanh_c.data() + b * H;
            const real* cv = c.data() + b * H;
            real* d = dpre.data() + b * 4 * H;
            for (int64_t j = 0; j < H; ++j) {
                const real i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
                const real dc = gc[j] + gh[j] * o * (1 - t[j] * t[j]);
                d[j] = dc * g * i * (1 - i);
                d[H + j] = dc * cv[j] * f * (1 - f);
                d[2 * H + j] = dc * i * (1 - g * g);
                d[3 * H + j] = gh[j] * t[j] * o * (1 - o);
                dc_prev.data()[b * H + j] = dc * f;
            }
        }
        if (bw.needs(0)) bw.accumulate(0, std::move(dpre));
        if (bw.needs(1)) bw.accumulate(1, std::move(dc_prev));
    });
    const std::vector<Var> h_c = detail::unbind_rows(hc);
    return {h_c[0], h_c[1]};
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
