// Recurrent cells: one time step of a GRU or an LSTM, after torch.nn.GRUCell
// and torch.nn.LSTMCell (same equations, gate order, parameter shapes and
// state_dict names, so PyTorch weights load unchanged).
//
// Shape legend: B batch, I input features, H hidden size.
//   x B×I, h B×H (and c B×H for the LSTM)
//   weight_ih G·H×I, weight_hh G·H×H, bias_ih G·H, bias_hh G·H, with G = 3 gates
//   (GRU: r, z, n) or 4 (LSTM: i, f, g, o), stacked in that order along the rows.
//
// A step splits into two halves, so that a sequence layer (nn/rnn.hpp) can
// compute the first half for every time step at once:
//   the projections   gi = x·W_ihᵀ + b_ih  (B×G·H)   gh = h·W_hhᵀ + b_hh  (B×G·H)
//   the gates         gru_gates(gi, gh, h) → h'      lstm_gates(gi + gh, c) → (h', c')
// Each gate function is written twice: composed from autograd ops (readable,
// the reference) and fused, one op with a hand-written backward (fast). The
// tests check that the two agree in value and gradient.
//
// docs/nn/rnn.md has the equations; tests/test_rnn.cpp compares with PyTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/variable.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attn {

// How a recurrent layer computes its steps. All three give the same values
// and gradients (up to rounding); they differ in speed and in readability.
enum class RnnMode {
    stepwise,     // the cell formula at every step, x_t·W_ihᵀ included: the readable one
    precomputed,  // x·W_ihᵀ for all steps in one matmul; per step h·W_hhᵀ and the composed gates
    fused,        // precomputed, and each step's gates as one op with a hand-written backward
    sequence,     // precomputed, and (GRU) all the steps of a direction as one op, gru_sequence_fused;
                  // an LSTM runs as fused
};
const char* to_string(RnnMode mode);

// An LSTM's state: h, the output, and c, the cell's memory, both B×H.
// (Sequence layers use it for the GRU too, leaving c undefined.)
struct LSTMState {
    Var h;
    Var c;
};

// ---- the two halves of a step ---------------------------------------------------

// x·Wᵀ + b: x B×F, w O×F, b O (or undefined: no bias) → B×O.
Var affine(const Var& x, const Var& w, const Var& b);

// GRU gates (Cho et al., 2014, in PyTorch's form), gi and gh B×3H = [r | z | n]:
//   r  = σ(gi_r + gh_r)
//   z  = σ(gi_z + gh_z)
//   n  = tanh(gi_n + r ⊙ gh_n)        (r scales W_hn·h + b_hn, bias included)
//   h' = (1 − z) ⊙ n + z ⊙ h
Var gru_gates(const Var& gi, const Var& gh, const Var& h);
Var gru_gates_fused(const Var& gi, const Var& gh, const Var& h);

// One direction of a GRU layer over a batch of sequences as one op (what
// RnnMode::sequence runs; nn/gru_sequence.cpp): for t = 0 … T−1 (reverse:
// T−1 … 0), h_t = gru_gates(gi_t, h_{t−1}·W_hhᵀ + b_hh, h_{t−1}), the state
// of a sequence kept and its output 0 at steps t ≥ its length.
//   gi T×B×3H (x_t·W_ihᵀ + b_ih for every step), w_hh 3H×H, b_hh 3H or
//   undefined, h0 B×H, lengths B (empty: every sequence T long)
//   → (T+1)×B×H: rows 0 … T−1 the outputs, row T the final states.
// The same values as the step-by-step layer (up to rounding). The batch is
// split over the threads, each running every step for its own rows, and the
// backward forms ∂L/∂W_hh with one product over all T·B rows.
Var gru_sequence_fused(const Var& gi, const Var& w_hh, const Var& b_hh, const Var& h0,
                       const std::vector<int64_t>& lengths, bool reverse);

// A layer's directions joined along the features, each given as
// gru_sequence_fused's (T+1)×B×H result, of which rows 0 … T−1 are taken:
//   → T×B×D·H, or B×T×D·H with batch_first, = [direction 0 | direction 1 …]
// The values of concat({narrow(seq_d, 0, 0, T) …}, 2), transposed to batch
// first when asked (what the step-by-step layer does), in one copy, not three.
Var join_directions(const std::vector<Var>& sequences, int64_t T, bool batch_first);

// LSTM gates (Hochreiter & Schmidhuber, 1997, with the forget gate of Gers et
// al., 2000), pre = gi + gh B×4H = [i | f | g | o]:
//   i = σ(pre_i)   f = σ(pre_f)   g = tanh(pre_g)   o = σ(pre_o)
//   c' = f ⊙ c + i ⊙ g
//   h' = o ⊙ tanh(c')
LSTMState lstm_gates(const Var& pre, const Var& c);
LSTMState lstm_gates_fused(const Var& pre, const Var& c);

// ---- whole steps, as functions --------------------------------------------------

// h' = gru_gates(x·W_ihᵀ + b_ih, h·W_hhᵀ + b_hh, h); biases may be undefined.
Var gru_cell(const Var& x, const Var& h, const Var& w_ih, const Var& w_hh, const Var& b_ih, const Var& b_hh,
             bool fused = false);
// (h', c') = lstm_gates(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh, c).
LSTMState lstm_cell(const Var& x, const LSTMState& state, const Var& w_ih, const Var& w_hh, const Var& b_ih,
                    const Var& b_hh, bool fused = false);

// ---- the cells as modules ----------------------------------------------------------

// GRUCell: h' = (1 − z) ⊙ n + z ⊙ h, with
//   r = σ(W_ir x + b_ir + W_hr h + b_hr)
//   z = σ(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
// x B×I, h B×H → h' B×H. Parameters: weight_ih 3H×I, weight_hh 3H×H,
// bias_ih 3H, bias_hh 3H, all U(−1/√H, 1/√H) as in PyTorch.
class GRUCell : public Module {
public:
    GRUCell(int64_t input_size, int64_t hidden_size, Generator& gen, bool bias = true);

    // h undefined means zeros.
    Var forward(const Var& x, const Var& h = {}) const;
    Var operator()(const Var& x, const Var& h = {}) const { return forward(x, h); }

    int64_t input_size() const { return input_size_; }
    int64_t hidden_size() const { return hidden_size_; }
    std::string describe() const override;

    Var weight_ih, weight_hh, bias_ih, bias_hh;  // biases undefined without bias
    // false (the default): the gates composed from autograd ops (gru_gates), the
    // version to read and step through; true: one op with a hand-written
    // backward (gru_gates_fused), the same values, faster. Module::set_fast
    // switches it.
    bool fused = false;

protected:
    void on_set_fast(bool on) override { fused = on; }  // Module::set_fast

private:
    int64_t input_size_, hidden_size_;
};

// LSTMCell: (h', c') with
//   i = σ(W_ii x + b_ii + W_hi h + b_hi)     f = σ(W_if x + b_if + W_hf h + b_hf)
//   g = tanh(W_ig x + b_ig + W_hg h + b_hg)  o = σ(W_io x + b_io + W_ho h + b_ho)
//   c' = f ⊙ c + i ⊙ g                       h' = o ⊙ tanh(c')
// x B×I, h B×H, c B×H → h' B×H, c' B×H. Parameters: weight_ih 4H×I,
// weight_hh 4H×H, bias_ih 4H, bias_hh 4H, all U(−1/√H, 1/√H).
class LSTMCell : public Module {
public:
    LSTMCell(int64_t input_size, int64_t hidden_size, Generator& gen, bool bias = true);

    // An undefined h or c means zeros.
    LSTMState forward(const Var& x, const LSTMState& state = {}) const;
    LSTMState operator()(const Var& x, const LSTMState& state = {}) const { return forward(x, state); }

    int64_t input_size() const { return input_size_; }
    int64_t hidden_size() const { return hidden_size_; }
    std::string describe() const override;

    Var weight_ih, weight_hh, bias_ih, bias_hh;
    bool fused = false;  // the gates composed (lstm_gates) or as one op (lstm_gates_fused), as GRUCell

protected:
    void on_set_fast(bool on) override { fused = on; }  // Module::set_fast

private:
    int64_t input_size_, hidden_size_;
};

namespace detail {
// gi, gh B×G·H (gh may be null) and the state s B×H, as the gate functions
// need them; throws naming `op` and the shapes (nn/rnn_cell.cpp).
void check_gate_inputs(const char* op, const Var* gi, const Var* gh, const Var& s, int64_t gates);
// One row of gru_gates_fused (H wide; gi, gh, rzn 3H): rzn ← [r | z | n], out ← h'.
void gru_gates_row(const real* gi, const real* gh, const real* h, int64_t H, real* rzn, real* out);
// Its backward for g = ∂L/∂h': dgi = [δr | δz | δn], dgh = [δr | δz | δn ⊙ r],
// dh = g ⊙ z (the part of ∂L/∂h that does not pass through gh).
void gru_gates_row_backward(const real* g, const real* rzn, const real* gh_n, const real* h, int64_t H, real* dgi,
                            real* dgh, real* dh);
// The rows of x along axis 0 as separate variables (x T×B×F → T of B×F), like
// torch.unbind: each shares x's storage (no copy), and the backward of row t
// adds its gradient into row block t of ∂L/∂x.
std::vector<Var> unbind_rows(const Var& x);
// Throws "<layer>: input 4×10 has 10 features but the <kind> expects 12" and
// the like, unless x is B×I and h (if defined) is B×H.
void check_cell_input(const char* layer, const Var& x, int64_t input_size);
void check_cell_state(const char* layer, const char* name, const Var& s, int64_t batch, int64_t hidden_size);
void check_sizes(const char* layer, int64_t input_size, int64_t hidden_size);
// A tensor of U(−1/√hidden, 1/√hidden), PyTorch's initialisation of every RNN
// weight and bias.
Tensor rnn_init(const Shape& shape, int64_t hidden, Generator& gen);
}  // namespace detail

}  // namespace attn
