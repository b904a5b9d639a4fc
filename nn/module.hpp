// Module: the base of every layer and model, after torch.nn.Module.
//
// A module owns named parameters (Vars with requires_grad = true) and named
// sub-modules; names join with dots, as in PyTorch's state_dict:
//
//     struct Encoder : Module {
//         Embedding embed;
//         GRU rnn;
//         Encoder(Generator& gen) : embed(32, 64, gen), rnn(64, 128, gen) {
//             register_module("embed", embed);
//             register_module("rnn", rnn);
//         }
//     };
//     // parameters: embed.weight, rnn.weight_ih_l0, rnn.weight_hh_l0, ...
//
// A module registers members of itself, so a module is neither copied nor
// moved (its registrations point into it). Hold models by value in main() or
// by std::unique_ptr.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.hpp"

namespace attn {

// Name → tensor, in registration order (PyTorch's state_dict order).
using StateDict = std::vector<std::pair<std::string, Tensor>>;

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Every parameter of this module and its sub-modules, depth first, each
    // with its dotted name ("encoder.rnn.weight_ih_l0").
    std::vector<std::pair<std::string, Var>> named_parameters() const;
    std::vector<Var> parameters() const;
    int64_t num_parameters() const;  // total number of scalars
    void zero_grad();

    // Training mode (dropout active) or evaluation mode; applies to sub-modules.
    void train(bool on = true);
    void eval() { train(false); }
    bool is_training() const { return training_; }

    // The fast paths, off by default: every layer runs its readable, composed
    // version, the one a debugger steps into. set_fast(true) switches this
    // module and its sub-modules to the fused kernels that live beside them
    // (the same values up to rounding; each pair is tested). The trainers'
    // --fast calls it on the whole model.
    void set_fast(bool on = true);
    bool is_fast() const { return fast_; }

    // Copies of every parameter's value (and buffer), by dotted name.
    StateDict state_dict() const;
    // Copies values in. Throws, naming the tensor, on a missing name, an
    // unexpected name, or a shape mismatch ("load_state_dict: rnn.weight_ih_l0
    // has shape 384×64 in the checkpoint but 384×32 in the model"). Nothing is
    // changed unless every tensor fits.
    void load_state_dict(const StateDict& state);

    // A module's type for printing, e.g. "Linear(in=64, out=48)".
    virtual std::string describe() const { return "Module"; }

protected:
    // Registers a parameter initialised to `value`; returns its Var so the
    // constructor can keep it: `weight = register_parameter("weight", w);`
    Var register_parameter(const std::string& name, Tensor value);
    // A tensor saved in the state_dict but not trained (running statistics, a
    // fixed position table). Returned tensor shares storage with the entry.
    Tensor register_buffer(const std::string& name, Tensor value);
    void register_module(const std::string& name, Module& child);
    // Called by set_fast on this module before its sub-modules: a layer with a
    // fast path turns it on or off here (Linear: matmul_bias or not).
    virtual void on_set_fast(bool on) { (void)on; }

    // Called by train(); layers with a mode-dependent forward need nothing
    // more than is_training().
private:
    void collect(const std::string& prefix, std::vector<std::pair<std::string, Var>>* params,
                 StateDict* buffers) const;
    void check_name(const std::string& name) const;

    std::vector<std::pair<std::string, Var>> parameters_;
    std::vector<std::pair<std::string, Tensor>> buffers_;
    std::vector<std::pair<std::string, Module*>> children_;
    bool training_ = true;
    bool fast_ = false;
};

// Evaluation mode for one scope, then back to the mode it found:
//   { EvalMode eval(model); ...decode... }   // dropout off, no sampling
// so a decoder can be called from inside a training loop without leaving the
// model in evaluation mode, or running it in training mode by mistake.
class EvalMode {
public:
    explicit EvalMode(Module& module) : module_(module), was_training_(module.is_training()) { module_.eval(); }
    ~EvalMode() { module_.train(was_training_); }
    EvalMode(const EvalMode&) = delete;
    EvalMode& operator=(const EvalMode&) = delete;

private:
    Module& module_;
    bool was_training_;
};

}  // namespace attn
