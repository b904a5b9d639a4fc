// Loss functions, after torch.nn.functional: each returns a scalar Var
// (reduction mean or sum) or the per-position losses (reduction none).
//
// Classes sit on the LAST axis (row = position): logits B×n×C with targets
// B×n, unlike PyTorch's N×C×d₁… layout; for 2-D logits N×C the two agree.
// Targets are class indices stored as reals.
//
//   cross_entropy    ℓ_r = −Σ_c q_{r,c} · log softmax(x_r)_c,
//                    q_r = (1 − ε)·onehot(t_r) + ε/C          (label smoothing ε)
//   nll              ℓ_r = −log_probs[r, t_r]
//   mse              ℓ_i = (x_i − y_i)²
//   bce_with_logits  ℓ_i = −[y_i·log σ(x_i) + (1 − y_i)·log(1 − σ(x_i))]
//                        = softplus(x_i) − x_i·y_i            (stable for any |x|)
//
// Reductions. cross_entropy and nll weigh each position r by w_r (an optional
// per-position weight, e.g. a 0/1 padding mask; 1 by default) and drop the
// positions whose target is ignore_index:
//   mean = Σ_r w_r ℓ_r / Σ_r w_r      sum = Σ_r w_r ℓ_r      none = w_r ℓ_r (0 where ignored)
// which is PyTorch's rule for class weights (pass w_r = class_weight[t_r]).
// When nothing counts (Σ w = 0), mean is 0 with zero gradient, not PyTorch's NaN.
// mse and bce_with_logits weigh element-wise and average over all elements:
//   mean = (1/N) Σ_i w_i ℓ_i          (PyTorch's `weight` argument of BCE)
#pragma once

#include <cstdint>

#include "autograd/variable.hpp"

namespace attn::loss {

enum class Reduction { mean, sum, none };

struct CrossEntropyOptions {
    int64_t ignore_index = -100;
    real label_smoothing = 0;
    Tensor weight{};  // per position, the targets' shape; undefined = every position weighs 1
    Reduction reduction = Reduction::mean;
    // The composition log_softmax → gather → weigh → reduce by default, whose
    // backward is theirs; fast (with no weight and reduction mean): autograd's
    // cross_entropy(), one op with its backward softmax − q written out, the
    // same values within rounding (tests/grad/test_nn_grad.cpp).
    bool fast = false;
};

// logits …×C, targets … → a scalar, or … for Reduction::none.
Var cross_entropy(const Var& logits, const Tensor& targets, const CrossEntropyOptions& options = {});

struct NllOptions {
    int64_t ignore_index = -100;
    Tensor weight{};  // per position, as for cross_entropy
    Reduction reduction = Reduction::mean;
};

// log_probs …×C (from log_softmax), targets … → a scalar, or … for none.
Var nll(const Var& log_probs, const Tensor& targets, const NllOptions& options = {});

// input and target of one shape → a scalar, or that shape for none.
Var mse(const Var& input, const Var& target, Reduction reduction = Reduction::mean);
Var mse(const Var& input, const Tensor& target, Reduction reduction = Reduction::mean);

struct BceOptions {
    Tensor weight{};  // broadcasts to the input; undefined = 1
    Reduction reduction = Reduction::mean;
};

// logits and targets (probabilities in [0, 1]) of one shape → a scalar, or
// that shape for none. ∂ℓ/∂x = σ(x) − y.
Var bce_with_logits(const Var& logits, const Tensor& targets, const BceOptions& options = {});

}  // namespace attn::loss
