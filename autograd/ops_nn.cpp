// Neural-network ops: softmax and log-softmax with masks, cross-entropy,
// dropout, and categorical sampling for hard attention.
//
// Shapes: softmax over one axis keeps the shape (scores B×n×m, axis −1 →
// weights B×n×m); losses take logits …×C with the classes on the last axis
// and class indices … and return a scalar.
#include <cmath>
#include <limits>
#include <string>

#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

constexpr real kNegInf = -std::numeric_limits<real>::infinity();

// The scores with the mask applied: every left-out position becomes −∞, which
// the softmax kernels turn into a weight of exactly 0 (and an all −∞ slice into
// all zeros, never NaN). A keep mask is applied by selection, so whatever a
// left-out score holds (NaN included) is gone; adding −∞ would keep a NaN
// (NaN + (−∞) = NaN). A non-finite score at a kept position is not hidden: it
// makes its slice NaN, as IEEE arithmetic does (docs/attention/transformer.md,
// "Masks and non-finite values").
Tensor masked_scores(const Tensor& x, const SoftmaxMask& mask, const char* op) {
    if (mask.kind == SoftmaxMask::Kind::none) return x;
    if (!mask.tensor.defined()) throw std::invalid_argument(std::string(op) + ": the mask tensor is undefined");
    const Shape& m = mask.tensor.shape();
    bool fits = m.rank() <= x.rank();
    for (int i = 1; fits && i <= m.rank(); ++i) fits = m[m.rank() - i] == 1 || m[m.rank() - i] == x.shape()[x.rank() - i];
    if (!fits)
        throw std::invalid_argument(std::string(op) + ": mask " + m.str() + " does not broadcast to the scores " +
                                    x.shape().str());
    if (mask.kind == SoftmaxMask::Kind::keep) return masked_fill(x, eq(mask.tensor, Tensor::scalar(0)), kNegInf);
    return add(x, mask.tensor);
}

bool has_neg_inf(const Tensor& t) {
    const real* p = t.data();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
        if (p[i] == kNegInf) return true;
    return false;
}

// Class indices of `targets` (shape = logits' shape without the last axis),
// checked against C classes; −1 marks an ignored position.
std::vector<int64_t> class_indices(const char* op, const Shape& logits, const Tensor& targets, int64_t ignore_index) {
    if (logits.rank() < 1 || logits[logits.rank() - 1] == 0)
        throw std::invalid_argument(std::string(op) + ": logits need a non-empty class axis, got shape " + logits.str());
    if (targets.shape() != logits.without(logits.rank() - 1))
        throw std::invalid_argument(std::string(op) + ": targets of shape " + targets.shape().str() +
                                    " do not match logits of shape " + logits.str() +
                                    " (targets need the logits' shape without the class axis)");
    const int64_t classes = logits[logits.rank() - 1];
    std::vector<int64_t> out(static_cast<size_t>(targets.numel()));
    for (int64_t r = 0; r < targets.numel(); ++r) {
        const real t = targets[r];
        if (t == static_cast<real>(ignore_index)) {
            out[static_cast<size_t>(r)] = -1;
        } else if (t >= 0 && t < static_cast<real>(classes) && t == std::floor(t)) {
            out[static_cast<size_t>(r)] = static_cast<int64_t>(t);
        } else {
            throw std::out_of_range(std::string(op) + ": target " + format_index(t) + " at position " +
                                    std::to_string(r) + " is out of range [0, " + std::to_string(classes) +
                                    ") (ignore_index is " + std::to_string(ignore_index) + ")");
        }
    }
    return out;
}

}  // namespace

// ---- softmax ---------------------------------------------------------------------

// z_i = e^(a_i) / Σ_j e^(a_j) along axis (z_i = 0 where left out)
//                                            ∂L/∂a_i = z_i·(g_i − Σ_j g_j·z_j)
// A left-out position has z_i = 0, so its gradient is 0; so is a whole row's
// when every position is left out.
Var softmax(const Var& a, int axis, const SoftmaxMask& mask) {
    const ProfileScope scope("softmax");
    const int ax = a.shape().normalize_axis(axis, "softmax");
    return record("softmax", softmax(masked_scores(a.value(), mask, "softmax"), ax), {a}, [ax](Backward& bw) {
        const Tensor& z = bw.output();
        const Tensor& g = bw.grad();
        const Tensor gz = sum(mul(g, z), ax, /*keepdim=*/true);  // Σ_j g_j·z_j, one per slice
        bw.accumulate(0, mul(z, sub(g, gz)));                     // z_i·(g_i − Σ_j g_j·z_j)
    });
}

// softmax's fast twin (Module::set_fast): the same forward, and the backward
// above in one pass per slice (tensor softmax_backward), without its two
// temporaries the size of z. The same values up to rounding (a test checks).
Var softmax_fused(const Var& a, int axis, const SoftmaxMask& mask) {
    const ProfileScope scope("softmax_fused");
    const int ax = a.shape().normalize_axis(axis, "softmax_fused");
    return record("softmax_fused", softmax(masked_scores(a.value(), mask, "softmax_fused"), ax), {a}, [ax](Backward& bw) {
        bw.accumulate(0, softmax_backward(bw.output(), bw.grad(), ax));
    });
}

// The same function written with autograd ops: softmax()'s value and its
// backward above must agree with this one's (a test checks).
// Subtracting the slice's maximum m cancels in the ratio, e^(a−m)/Σe^(a−m) =
// e^a/Σe^a, but keeps e^x from overflowing; m is a constant (no gradient
// flows through it, and none needs to: the result does not depend on it).
Var softmax_composed(const Var& a, int axis) {
    const Var m(max(a.value(), axis, /*keepdim=*/true));
    const Var e = exp(a - m);
    return e / sum(e, axis, /*keepdim=*/true);
}

// z_i = a_i − ln Σ_j e^(a_j) along axis (z_i = −∞ where left out)
//                                            ∂L/∂a_i = g_i − e^(z_i)·Σ_j g_j
// The sums run over the positions that take part: a left-out z_i is the
// constant −∞, so its g_i (whatever it is, even NaN) is dropped first.
Var log_softmax(const Var& a, int axis, const SoftmaxMask& mask) {
    const ProfileScope scope("log_softmax");
    const int ax = a.shape().normalize_axis(axis, "log_softmax");
    const Tensor x = masked_scores(a.value(), mask, "log_softmax");
    Tensor left_out = has_neg_inf(x) ? eq(x, Tensor::scalar(kNegInf)) : Tensor();
    return record("log_softmax", log_softmax(x, ax), {a}, [ax, left_out](Backward& bw) {
        const Tensor g = left_out.defined() ? masked_fill(bw.grad(), left_out, 0) : bw.grad();
        bw.accumulate(0, sub(g, mul(exp(bw.output()), sum(g, ax, true))));
    });
}

// ---- losses -------------------------------------------------------------------------

// Fused log-softmax + negative log-likelihood, rows r = positions, c = classes,
// t_r = target, n = number of non-ignored rows, ε = label smoothing:
//   loss = (1/n) Σ_r [ lse_r − (1−ε)·x_{r,t_r} − (ε/C)·Σ_c x_{r,c} ],   lse_r = ln Σ_c e^(x_{r,c})
//   ∂L/∂x_{r,c} = (g/n)·( softmax(x_r)_c − (1−ε)·[c = t_r] − ε/C ),    0 for ignored rows
// (−Σ_c q_c·log_softmax(x_r)_c with q = (1−ε)·onehot(t_r) + ε/C, expanded.)
Var cross_entropy(const Var& logits, const Tensor& targets, int64_t ignore_index, real label_smoothing) {
    const ProfileScope scope("cross_entropy");
    const std::vector<int64_t> t = class_indices("cross_entropy", logits.shape(), targets, ignore_index);
    if (!(label_smoothing >= 0 && label_smoothing <= 1))
        throw std::invalid_argument("cross_entropy: label_smoothing " + std::to_string(label_smoothing) +
                                    " is not in [0, 1]");
    const int64_t C = logits.shape()[logits.rank() - 1], N = static_cast<int64_t>(t.size());
    const real eps = label_smoothing;
    const Tensor x = logits.value().reshape(Shape{N, C});
    Tensor lse = Tensor::empty(Shape{N});
    double total = 0;
    int64_t kept = 0;
    for (int64_t r = 0; r < N; ++r) {
        if (t[static_cast<size_t>(r)] < 0) continue;
        const real* xr = x.data() + r * C;
        double m = xr[0], row_sum = 0, s = 0;
        for (int64_t c = 1; c < C; ++c) m = std::max<double>(m, xr[c]);
        for (int64_t c = 0; c < C; ++c) s += std::exp(xr[c] - m), row_sum += xr[c];
        lse[r] = static_cast<real>(m + std::log(s));
        total += lse[r] - (1 - eps) * xr[t[static_cast<size_t>(r)]] - eps / C * row_sum;
        ++kept;
    }
    const real loss = kept > 0 ? static_cast<real>(total / kept) : 0;
    return record("cross_entropy", Tensor::scalar(loss), {logits}, [x, t, lse, kept, eps](Backward& bw) {
        const int64_t rows = x.shape()[0], classes = x.shape()[1];
        Tensor dx = bw.grad_buffer(0).reshape(Shape{rows, classes});  // a view: adds into the buffer
        if (kept == 0) return;  // nothing counted: zero gradient
        const real scale = bw.grad().item() / static_cast<real>(kept);
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t target = t[static_cast<size_t>(r)];
            if (target < 0) continue;
            const real* xr = x.data() + r * classes;
            real* dr = dx.data() + r * classes;
            for (int64_t c = 0; c < classes; ++c) {
                const real q = (c == target ? 1 - eps : 0) + eps / static_cast<real>(classes);
                dr[c] += scale * (std::exp(xr[c] - lse[r]) - q);
            }
        }
    });
}

// −(1/n) Σ_r log_probs[r, t_r] over non-ignored rows: composed from gather,
// mul and sum, so its backward is theirs. cross_entropy's composite twin.
Var nll_loss(const Var& log_probs, const Tensor& targets, int64_t ignore_index) {
    const std::vector<int64_t> t = class_indices("nll_loss", log_probs.shape(), targets, ignore_index);
    Tensor safe = Tensor::empty(targets.shape()), counted = Tensor::empty(targets.shape());
    int64_t kept = 0;
    for (size_t r = 0; r < t.size(); ++r) {
        safe[static_cast<int64_t>(r)] = static_cast<real>(t[r] < 0 ? 0 : t[r]);
        counted[static_cast<int64_t>(r)] = t[r] < 0 ? 0 : 1;
        kept += t[r] < 0 ? 0 : 1;
    }
    const Var picked = squeeze(gather(log_probs, -1, unsqueeze(safe, -1)), -1);  // log_probs[r, t_r]
    return mul(sum(mul(picked, Var(counted))), real(-1) / static_cast<real>(std::max<int64_t>(kept, 1)));
}

// ---- dropout ---------------------------------------------------------------------------

// z = a ⊙ m/(1−p), m_i ~ Bernoulli(1−p)      ∂L/∂a = g ⊙ m/(1−p)
Var dropout(const Var& a, real p, Generator& gen, bool training) {
    const ProfileScope scope("dropout");
    if (!(p >= 0 && p <= 1))
        throw std::invalid_argument("dropout: probability " + std::to_string(p) + " is not in [0, 1]");
    if (!training || p == 0) return a;
    const real kept_scale = p < 1 ? 1 / (1 - p) : 0;  // p = 1 drops everything
    // Element i is kept when u_i ≥ p, u_i = gen.uniform() = k_i·2⁻⁵³ (k_i the
    // top 53 of 64 random bits): the same test as k_i ≥ ⌈p·2⁵³⌉ on integers,
    // which spares a conversion per element and draws exactly the same mask.
    // The choice is a bit mask, not a branch (a random branch mispredicts),
    // and the draws come from a local copy of the generator, whose state the
    // compiler can then keep in registers (docs/performance.md).
    const auto threshold = static_cast<uint64_t>(std::ceil(static_cast<double>(p) * 0x1.0p53));
    Tensor mask = Tensor::empty(a.shape());
    real* m = mask.data();
    const int64_t n = mask.numel();
    Generator draws = gen;
    for (int64_t i = 0; i < n; ++i) m[i] = keep_or_zero((draws.next_u64() >> 11) >= threshold, kept_scale);
    gen = draws;
    return record("dropout", mul(a.value(), mask), {a},
                  [mask](Backward& bw) { bw.accumulate(0, mul(bw.grad(), mask)); });
}

// ---- categorical sampling (hard attention) ----------------------------------------------

// For each row of probs …×K, an index k drawn with probability p_k / Σ_j p_j,
// by inverting the cumulative sum. Not differentiable: REINFORCE uses
// categorical_log_prob below instead.
Tensor sample_categorical(const Tensor& probs, Generator& gen) {
    if (probs.rank() < 1 || probs.shape()[probs.rank() - 1] == 0)
        throw std::invalid_argument("sample_categorical: probs need a non-empty last axis, got shape " +
                                    probs.shape().str());
    const int64_t K = probs.shape()[probs.rank() - 1], N = probs.numel() / K;
    Tensor out = Tensor::empty(probs.shape().without(probs.rank() - 1));
    for (int64_t r = 0; r < N; ++r) {
        const real* p = probs.data() + r * K;
        double total = 0;
        int64_t last_positive = -1;
        for (int64_t k = 0; k < K; ++k) {
            if (!(p[k] >= 0) || std::isinf(p[k]))
                throw std::invalid_argument("sample_categorical: probability " + std::to_string(p[k]) + " in row " +
                                            std::to_string(r) + " is negative or not finite");
            total += p[k];
            if (p[k] > 0) last_positive = k;
        }
        if (last_positive < 0)
            throw std::invalid_argument("sample_categorical: row " + std::to_string(r) +
                                        " has no positive probability");
        const double u = gen.uniform() * total;
        int64_t pick = last_positive;  // if rounding leaves u ≥ the last partial sum
        double cumulative = 0;
        for (int64_t k = 0; k < K; ++k) {
            cumulative += p[k];
            if (p[k] > 0 && u < cumulative) {
                pick = k;
                break;
            }
        }
        out[r] = static_cast<real>(pick);
    }
    return out;
}

// log p[…, s[…]]: gather the sampled probability, take its log; composed, so
// ∂/∂p[…, k] = [k = s]/p[…, s] comes from gather's and log's backward.
Var categorical_log_prob(const Var& probs, const Tensor& sample) {
    if (probs.rank() < 1 || sample.shape() != probs.shape().without(probs.rank() - 1))
        throw std::invalid_argument("categorical_log_prob: sample of shape " + sample.shape().str() +
                                    " does not match probs of shape " + probs.shape().str() +
                                    " (it needs probs' shape without the last axis)");
    return log(squeeze(gather(probs, -1, unsqueeze(sample, -1)), -1));
}

}  // namespace attn
