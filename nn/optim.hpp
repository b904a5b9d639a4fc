// Optimisers, after torch.optim: SGD (with momentum and Nesterov), Adam and
// AdamW, with PyTorch's update formulas, and clip_grad_norm_.
//
// An optimiser holds a list of named parameters and, per parameter, a step
// count and its buffers ("slots": momentum_buffer, exp_avg, exp_avg_sq). The
// training loop is PyTorch's:
//
//   Adam opt(model.named_parameters(), AdamOptions{.lr = 1e-3});
//   for (...) {
//       opt.zero_grad();
//       Var loss = ...;
//       loss.backward();
//       clip_grad_norm_(model.parameters(), 1.0);
//       opt.set_lr(schedule.lr(t));
//       opt.step();
//   }
//
// step() updates each parameter's tensor in place, under NoGradGuard, in one
// loop over its elements (no temporary tensors). A parameter whose gradient is
// undefined (backward never reached it) is skipped, as in PyTorch, and its
// step count does not advance. The hyperparameters are not state: a resumed
// run constructs the optimiser with the same options, then loads the state.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.hpp"
#include "nn/module.hpp"

namespace attn {

using NamedParameters = std::vector<std::pair<std::string, Var>>;

// The parameters an optimiser updates: module.named_parameters() (their names
// key the optimiser's state), or plain Vars, named "0", "1", … (the integer
// ids of PyTorch's optimizer state_dict). A variable listed twice (tied
// weights) is updated once, under its first name.
struct ParameterList {
    NamedParameters named;
    ParameterList(NamedParameters params) : named(std::move(params)) {}  // NOLINT: implicit on purpose
    ParameterList(const std::vector<Var>& params);                       // NOLINT
    ParameterList(std::initializer_list<Var> params) : ParameterList(std::vector<Var>(params)) {}
};

// An optimiser's state for a checkpoint. io/checkpoint.hpp stores `tensors`
// as "optimizer.state.<name>" and the rest in the metadata.
struct OptimizerState {
    std::string type;  // "SGD", "Adam", "AdamW"
    double lr = 0;
    // Parameter name → updates applied so far (parameters updated at least once).
    std::vector<std::pair<std::string, int64_t>> steps;
    // "<parameter name>.<slot>" → buffer, e.g. "fc.weight.exp_avg".
    StateDict tensors;
};

class Optimizer {
public:
    Optimizer(ParameterList params, double lr);
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    // One update of every parameter that has a gradient.
    void step();
    // Sets every parameter's gradient to zero (keeping the buffers).
    void zero_grad();

    double lr() const { return lr_; }
    void set_lr(double lr);
    const NamedParameters& parameters() const { return params_; }
    // Updates applied to parameter i so far.
    int64_t steps(size_t i) const { return state_.at(i).step; }

    virtual std::string type() const = 0;      // "Adam"
    virtual std::string describe() const = 0;  // "Adam(lr=0.001, betas=(0.9, 0.999), ...)"

    // ---- weight averaging ---------------------------------------------------------
    // Polyak averaging as an exponential moving average of the weights: after
    // every update of parameter p,
    //     average = p                                      after its first update
    //     average = decay·average + (1 − decay)·p          after every later one
    // The average is kept beside the optimiser's buffers as one more slot,
    // "average" (as torch.optim.ASGD keeps its "ax"), so a checkpoint holds it
    // and a resumed run goes on with it. decay 0 (the default) keeps none.
    // Like the learning rate, the decay is a setting, not state: a resumed run
    // sets it again before loading the state.
    void set_average(double decay);
    double average_decay() const { return average_; }
    // Exchanges every parameter's weights with its average (a parameter not yet
    // updated has none and keeps its own). Called twice, nothing has changed:
    // the training loop validates and keeps the best checkpoint between the two.
    void swap_average();

    // Copies of the state, and loading it back. load_state_dict checks
    // everything before changing anything, and throws naming the entry:
    // the wrong optimiser type, an unknown parameter or slot, a missing
    // slot, or a shape that does not match the parameter.
    OptimizerState state_dict() const;
    void load_state_dict(const OptimizerState& state);

protected:
    // The per-parameter state: the step count and the buffers, in the order
    // of slot_names(); `slots` is empty until the first update creates them.
    struct ParamState {
        int64_t step = 0;
        std::vector<Tensor> slots;
    };
    virtual std::vector<std::string> slot_names() const = 0;
    // The one override point: update parameter p in place from its gradient
    // g (same shape). state.step has already been incremented for this step.
    virtual void update(Tensor& p, const Tensor& g, ParamState& state) = 0;

private:
    // slot_names(), and "average" last when averaging.
    std::vector<std::string> all_slot_names() const;

    NamedParameters params_;
    std::vector<ParamState> state_;
    double lr_;
    double average_ = 0;
};

// ---- SGD ------------------------------------------------------------------------
// torch.optim.SGD, for each parameter p with gradient g:
//   d = g + λ·p                                   (weight decay λ, as L2)
//   b = d at the first step, else μ·b + (1 − τ)·d  (momentum μ, dampening τ)
//   d = d + μ·b if Nesterov, else b                (only when μ ≠ 0)
//   p = p − lr·d
struct SGDOptions {
    double lr = 0.01;
    double momentum = 0;
    double dampening = 0;
    double weight_decay = 0;
    bool nesterov = false;
};

class SGD : public Optimizer {
public:
    explicit SGD(ParameterList params, SGDOptions options = {});
    std::string type() const override { return "SGD"; }
    std::string describe() const override;
    const SGDOptions& options() const { return options_; }

protected:
    std::vector<std::string> slot_names() const override;
    void update(Tensor& p, const Tensor& g, ParamState& state) override;

private:
    SGDOptions options_;
};

// ---- Adam and AdamW ----------------------------------------------------------------
// Adam (Kingma & Ba, 2015) as torch.optim.Adam, at step t = 1, 2, …:
//   d = g + λ·p                                   (Adam: weight decay as L2 in the gradient)
//   m = β₁·m + (1 − β₁)·d                         (m, v start at 0)
//   v = β₂·v + (1 − β₂)·d²
//   v̂ = max(v̂, v) with amsgrad, else v̂ = v
//   p = p − (lr / (1 − β₁ᵗ)) · m / (√v̂ / √(1 − β₂ᵗ) + ε)     (ε outside the square root)
// AdamW (Loshchilov & Hutter, 2019) as torch.optim.AdamW decouples the decay:
//   p = p·(1 − lr·λ) first, then the update above with d = g.
struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0;  // AdamW's default is 0.01: AdamW's constructor takes its own default
    bool amsgrad = false;
    // false (the default): the update is the plain loop of Adam::update, the
    // formula one value at a time; true: the same update split over the
    // threads, 8 values at a time where the CPU has AVX2 (nn/optim_avx2.cpp;
    // the same values up to rounding). The trainers' --fast sets it.
    bool fast = false;
};

class Adam : public Optimizer {
public:
    explicit Adam(ParameterList params, AdamOptions options = {});
    std::string type() const override { return decoupled_ ? "AdamW" : "Adam"; }
    std::string describe() const override;
    const AdamOptions& options() const { return options_; }

protected:
    Adam(ParameterList params, AdamOptions options, bool decoupled_weight_decay);
    std::vector<std::string> slot_names() const override;
    void update(Tensor& p, const Tensor& g, ParamState& state) override;

private:
    AdamOptions options_;
    bool decoupled_;
};

class AdamW : public Adam {
public:
    // options default to PyTorch's AdamW: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0.01.
    explicit AdamW(ParameterList params, AdamOptions options = default_options());
    static AdamOptions default_options() { return AdamOptions{.weight_decay = 0.01}; }
};

// ---- gradient clipping ---------------------------------------------------------------
// torch.nn.utils.clip_grad_norm_: the norm of all gradients together, as one
// vector, ‖g‖_p = (Σ_i |g_i|^p)^(1/p) (p = ∞: max |g_i|); if it exceeds
// max_norm, every gradient is scaled by max_norm / (‖g‖ + 10⁻⁶). Returns the
// norm before clipping. Parameters without a gradient are left out.
double clip_grad_norm_(const std::vector<Var>& params, double max_norm, double norm_type = 2.0);

}  // namespace attn
