// Recurrent layers over whole sequences, after torch.nn.GRU and torch.nn.LSTM
// with batch_first=True: multi-layer, optionally bidirectional, with an
// optional initial state and optional sequence lengths (padding).
//
// Shape legend: B batch, T time steps, I input features, H hidden size,
// L num_layers, D directions (2 if bidirectional, else 1).
//   input   B×T×I              (row = time step, the project's convention)
//   h0, c0  L·D×B×H            (index layer·D + direction, as PyTorch)
//   output  B×T×D·H            ([forward | backward] along the last axis)
//   h_n, c_n L·D×B×H           (the state after each sequence's own last step)
// Parameters of layer l, direction suffix "" or "_reverse" (PyTorch's names):
//   weight_ih_l{l}  G·H×I (l = 0) or G·H×D·H (l > 0)   weight_hh_l{l}  G·H×H
//   bias_ih_l{l}    G·H                                bias_hh_l{l}    G·H
// with G = 3 (GRU: r, z, n) or 4 (LSTM: i, f, g, o); the equations of one step
// are those of GRUCell and LSTMCell (nn/rnn_cell.hpp).
//
// Lengths: lengths[b] is the true length of sequence b (in [0, T]); steps at
// t >= lengths[b] are padding. A padded step leaves the state unchanged and
// outputs zeros, so that, exactly as with PyTorch's pack_padded_sequence:
//   - h_n is the state after step lengths[b] − 1 (forward direction);
//   - the reverse direction of sequence b starts at step lengths[b] − 1 from
//     h0, never seeing the padding;
//   - padded output rows are zero (pad_packed_sequence with total_length = T).
// No lengths means every sequence is T long.
//
// docs/nn/rnn.md explains the layers; tests/test_rnn.cpp compares them with
// PyTorch and tests/grad/grad_rnn.cpp checks their gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/variable.hpp"
#include "nn/module.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/random.hpp"

namespace attn {

// GRU(10, 16, gen, {.num_layers = 2, .bidirectional = true})
struct RNNOptions {
    int64_t num_layers = 1;
    bool bias = true;
    bool bidirectional = false;
    real dropout = 0;  // on each layer's output but the last, in training mode (as PyTorch)
};

struct GRUOutput {
    Var output;  // B×T×D·H
    Var h_n;     // L·D×B×H
};

struct LSTMOutput {
    Var output;  // B×T×D·H
    Var h_n;     // L·D×B×H
    Var c_n;     // L·D×B×H
};

// The parameters of one direction of one layer.
struct RNNWeights {
    Var w_ih, w_hh, b_ih, b_hh;  // biases undefined without bias
};

// What GRU and LSTM share: the parameters, the checks, and the loop over
// layers, directions and time steps. A subclass says what one step is.
class RNNBase : public Module {
public:
    int64_t input_size() const { return input_size_; }
    int64_t hidden_size() const { return hidden_size_; }
    int64_t num_layers() const { return options_.num_layers; }
    bool bidirectional() const { return options_.bidirectional; }
    int64_t directions() const { return options_.bidirectional ? 2 : 1; }
    const RNNOptions& options() const { return options_; }
    // Draw the between-layer dropout masks from `gen` (kept by reference: it
    // must outlive the layer) instead of the layer's own generator, so that a
    // model whose trainer reseeds one generator every step (for resumable runs)
    // reseeds these masks too.
    void use_dropout_generator(Generator& gen) { external_dropout_gen_ = &gen; }
    // The parameters of layer `layer`, direction 0 (forward) or 1 (reverse).
    const RNNWeights& weights(int64_t layer, int64_t direction) const;
    std::string describe() const override;

    // How the steps are computed (see RnnMode): by default the cell formula at
    // every step, the version to read and step through; Module::set_fast(true)
    // chooses RnnMode::sequence, the fastest (the same values); any mode can
    // also be chosen by name.
    RnnMode mode = RnnMode::stepwise;

protected:
    void on_set_fast(bool on) override { mode = on ? RnnMode::sequence : RnnMode::stepwise; }

    // gates: 3 for a GRU, 4 for an LSTM.
    RNNBase(const char* name, int64_t gates, int64_t input_size, int64_t hidden_size, Generator& gen,
            const RNNOptions& options);

    // Runs every layer and direction over the sequence. initial.h / initial.c
    // are L·D×B×H or undefined (zeros); c is used only when the step uses it.
    LSTMOutput run(const Var& input, const LSTMState& initial, const std::vector<int64_t>& lengths) const;

    // The one override point: one time step of one direction of one layer.
    // In stepwise mode x_t (B×F) is given and gi_t is undefined; otherwise
    // gi_t = x_t·W_ihᵀ + b_ih (B×G·H) is given, computed for all steps at once.
    virtual LSTMState step(const Var& x_t, const Var& gi_t, const LSTMState& state, const RNNWeights& w) const = 0;

private:
    LSTMOutput run_gru_sequences(const Var& input, const LSTMState& initial, const std::vector<int64_t>& lengths) const;
    Var between_layers(const Var& x) const;
    void check_input(const Var& input) const;
    void check_state(const char* which, const Var& s, int64_t batch) const;
    std::vector<int64_t> checked_lengths(const std::vector<int64_t>& lengths, int64_t batch, int64_t steps) const;

    const char* name_;
    int64_t gates_, input_size_, hidden_size_;
    RNNOptions options_;
    std::vector<RNNWeights> weights_;  // index layer·D + direction
    mutable Generator dropout_gen_;    // forked from the constructor's generator
    Generator* external_dropout_gen_ = nullptr;  // use_dropout_generator's, if set
};

// GRU over sequences. At each step t of each layer and direction:
//   r_t = σ(W_ir x_t + b_ir + W_hr h_{t−1} + b_hr)
//   z_t = σ(W_iz x_t + b_iz + W_hz h_{t−1} + b_hz)
//   n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t−1} + b_hn))
//   h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}
// x_t is the input row t (layer 0) or the previous layer's output row t.
// input B×T×I, h0 L·D×B×H → output B×T×D·H, h_n L·D×B×H.
class GRU : public RNNBase {
public:
    GRU(int64_t input_size, int64_t hidden_size, Generator& gen, const RNNOptions& options = {});

    // h0 undefined means zeros; lengths empty means all sequences are T long.
    GRUOutput forward(const Var& input, const Var& h0 = {}, const std::vector<int64_t>& lengths = {}) const;
    GRUOutput operator()(const Var& input, const Var& h0 = {}, const std::vector<int64_t>& lengths = {}) const {
        return forward(input, h0, lengths);
    }

protected:
    LSTMState step(const Var& x_t, const Var& gi_t, const LSTMState& state, const RNNWeights& w) const override;
};

// LSTM over sequences. At each step t of each layer and direction:
//   i_t = σ(W_ii x_t + b_ii + W_hi h_{t−1} + b_hi)     f_t = σ(W_if x_t + b_if + W_hf h_{t−1} + b_hf)
//   g_t = tanh(W_ig x_t + b_ig + W_hg h_{t−1} + b_hg)  o_t = σ(W_io x_t + b_io + W_ho h_{t−1} + b_ho)
//   c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t                    h_t = o_t ⊙ tanh(c_t)
// input B×T×I, (h0, c0) L·D×B×H each → output B×T×D·H, h_n and c_n L·D×B×H.
class LSTM : public RNNBase {
public:
    LSTM(int64_t input_size, int64_t hidden_size, Generator& gen, const RNNOptions& options = {});

    // An undefined initial.h or initial.c means zeros.
    LSTMOutput forward(const Var& input, const LSTMState& initial = {},
                       const std::vector<int64_t>& lengths = {}) const;
    LSTMOutput operator()(const Var& input, const LSTMState& initial = {},
                          const std::vector<int64_t>& lengths = {}) const {
        return forward(input, initial, lengths);
    }

protected:
    LSTMState step(const Var& x_t, const Var& gi_t, const LSTMState& state, const RNNWeights& w) const override;
};

}  // namespace attn
