#include "nn/loss.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "tensor/ops.hpp"

namespace attn::loss {

namespace {

// The classes of `targets` with ignored positions replaced by class 0 (so a
// gather can pick something) and the position weights w_r, zero where the
// target is ignore_index. Targets out of range throw, naming op and position.
struct Positions {
    Tensor classes;  // targets' shape
    Tensor weight;   // targets' shape
};

Positions positions(const char* op, const Shape& scores, const Tensor& targets, int64_t ignore_index,
                    const Tensor& weight) {
    if (scores.rank() < 1 || scores[scores.rank() - 1] == 0)
        throw std::invalid_argument(std::string(op) + ": scores need a non-empty class axis, got shape " +
                                    scores.str());
    if (targets.shape() != scores.without(scores.rank() - 1))
        throw std::invalid_argument(std::string(op) + ": targets of shape " + targets.shape().str() +
                                    " do not match scores of shape " + scores.str() +
                                    " (targets need the scores' shape without the class axis)");
    if (weight.defined() && weight.shape() != targets.shape())
        throw std::invalid_argument(std::string(op) + ": weight of shape " + weight.shape().str() +
                                    " must have the targets' shape " + targets.shape().str());
    const real C = static_cast<real>(scores[scores.rank() - 1]);
    Positions p{Tensor::empty(targets.shape()), Tensor::empty(targets.shape())};
    for (int64_t r = 0; r < targets.numel(); ++r) {
        const real t = targets[r];
        const bool ignored = t == static_cast<real>(ignore_index);
        if (!ignored && !(t >= 0 && t < C && t == std::floor(t)))
            throw std::out_of_range(std::string(op) + ": target " + format_index(t) + " at position " +
                                    std::to_string(r) + " is out of range [0, " + format_index(C) +
                                    ") (ignore_index is " + std::to_string(ignore_index) + ")");
        p.classes[r] = ignored ? 0 : t;
        p.weight[r] = ignored ? 0 : (weight.defined() ? weight[r] : 1);
    }
    return p;
}

// Σ_r w_r ℓ_r / Σ_r w_r (mean), Σ_r w_r ℓ_r (sum) or w_r ℓ_r (none).
Var reduce_weighted(const Var& losses, const Tensor& w, Reduction reduction) {
    Var weighted = losses * Var(w);
    if (reduction == Reduction::none) return weighted;
    Var total = sum(weighted);
    if (reduction == Reduction::sum) return total;
    const real w_sum = sum(w).item();
    return total / (w_sum != 0 ? w_sum : real(1));  // nothing counted: 0 / 1
}

Var reduce(const Var& losses, Reduction reduction) {
    switch (reduction) {
        case Reduction::mean: return mean(losses);
        case Reduction::sum: return sum(losses);
        case Reduction::none: break;
    }
    return losses;
}

}  // namespace

// ℓ_r = −(1 − ε)·log p_{r,t_r} − (ε/C)·Σ_c log p_{r,c},   log p = log_softmax(x_r)
Var cross_entropy(const Var& logits, const Tensor& targets, const CrossEntropyOptions& options) {
    const real eps = options.label_smoothing;
    if (!(eps >= 0 && eps <= 1))
        throw std::invalid_argument("loss::cross_entropy: label_smoothing " + std::to_string(eps) +
                                    " is not in [0, 1]");
    if (options.fast && !options.weight.defined() && options.reduction == Reduction::mean)
        return attn::cross_entropy(logits, targets, options.ignore_index, eps);  // one op, autograd/ops_nn.cpp
    const Positions p =
        positions("loss::cross_entropy", logits.shape(), targets, options.ignore_index, options.weight);
    const Var log_p = log_softmax(logits, -1);                                          // …×C
    const Var picked = squeeze(gather(log_p, -1, unsqueeze(p.classes, -1)), -1);       // …
    Var losses = -picked;
    if (eps > 0) {
        const real C = static_cast<real>(logits.size(-1));
        losses = (1 - eps) * losses - (eps / C) * sum(log_p, -1);
    }
    return reduce_weighted(losses, p.weight, options.reduction);
}

// ℓ_r = −log_probs[r, t_r]
Var nll(const Var& log_probs, const Tensor& targets, const NllOptions& options) {
    const Positions p = positions("loss::nll", log_probs.shape(), targets, options.ignore_index, options.weight);
    const Var picked = squeeze(gather(log_probs, -1, unsqueeze(p.classes, -1)), -1);
    return reduce_weighted(-picked, p.weight, options.reduction);
}

// ℓ_i = (x_i − y_i)²
Var mse(const Var& input, const Var& target, Reduction reduction) {
    if (input.shape() != target.shape())
        throw std::invalid_argument("loss::mse: input " + input.shape().str() + " and target " +
                                    target.shape().str() + " must have the same shape");
    return reduce(square(input - target), reduction);
}

Var mse(const Var& input, const Tensor& target, Reduction reduction) { return mse(input, Var(target), reduction); }

// ℓ_i = softplus(x_i) − x_i·y_i = log(1 + e^{x_i}) − x_i·y_i
// softplus is computed stably (no overflow of e^x for large x, no log(0) for
// very negative x), and its derivative σ(x) makes ∂ℓ/∂x = σ(x) − y exact.
Var bce_with_logits(const Var& logits, const Tensor& targets, const BceOptions& options) {
    if (logits.shape() != targets.shape())
        throw std::invalid_argument("loss::bce_with_logits: logits " + logits.shape().str() + " and targets " +
                                    targets.shape().str() + " must have the same shape");
    if (options.weight.defined() &&
        broadcast_shapes(options.weight.shape(), logits.shape(), "loss::bce_with_logits") != logits.shape())
        throw std::invalid_argument("loss::bce_with_logits: weight " + options.weight.shape().str() +
                                    " does not broadcast to logits " + logits.shape().str());
    Var losses = softplus(logits) - logits * Var(targets);
    if (options.weight.defined()) losses = losses * Var(options.weight);
    return reduce(losses, options.reduction);
}

}  // namespace attn::loss
