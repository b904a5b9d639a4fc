// The differentiable ops: free functions on Var with the names of the tensor
// ops (tensor/ops.hpp), so model code reads like the math.
//
// Each op's forward and backward sit side by side in one file per family:
//
//   autograd/ops_elementwise.cpp   add sub mul div neg pow exp log sqrt abs clamp
//                                  minimum maximum tanh sigmoid relu leaky_relu gelu softplus
//   autograd/ops_reduce.cpp        sum mean max min logsumexp
//   autograd/ops_linalg.cpp        matmul
//   autograd/ops_shape.cpp         reshape transpose permute slice narrow concat stack split
//                                  expand squeeze unsqueeze
//   autograd/ops_index.cpp         gather index_select embedding masked_fill where
//   autograd/ops_nn.cpp            softmax log_softmax cross_entropy nll_loss dropout
//                                  sample_categorical categorical_log_prob
//   autograd/ops_conv.cpp          unfold conv2d max_pool2d avg_pool2d
//   autograd/ops_conv_fast.cpp     conv2d_fused conv2d_max_pool_fused conv2d_max_pool_relu_fused
//
// docs/autograd.md has every op's derivative in one table. Binary element-wise
// ops broadcast as NumPy does; their backward sums the gradient back to each
// input's shape. Shapes that do not fit throw std::invalid_argument naming the
// op and the shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "autograd/variable.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- element-wise (ops_elementwise.cpp) ------------------------------------
Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
Var add(const Var& a, real b);
Var mul(const Var& a, real b);
Var neg(const Var& a);
Var pow(const Var& a, real exponent);
Var pow(const Var& a, const Var& exponent);  // a > 0 where the exponent wants a gradient
Var square(const Var& a);
Var exp(const Var& a);
Var log(const Var& a);
Var sqrt(const Var& a);
Var abs(const Var& a);
Var clamp(const Var& a, real lo, real hi);
Var minimum(const Var& a, const Var& b);  // ties share the gradient equally
Var maximum(const Var& a, const Var& b);
Var tanh(const Var& a);
Var sigmoid(const Var& a);
Var relu(const Var& a);
Var leaky_relu(const Var& a, real negative_slope = real(0.01));
Var gelu(const Var& a);  // exact: a·Φ(a)
Var softplus(const Var& a);

Var operator+(const Var& a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator/(const Var& a, const Var& b);
Var operator-(const Var& a);
Var operator+(const Var& a, real b);
Var operator+(real a, const Var& b);
Var operator-(const Var& a, real b);
Var operator-(real a, const Var& b);
Var operator*(const Var& a, real b);
Var operator*(real a, const Var& b);
Var operator/(const Var& a, real b);
Var operator/(real a, const Var& b);

// ---- reductions (ops_reduce.cpp) --------------------------------------------
// Along one axis (negative counts from the end) or several; keepdim keeps the
// reduced axes as size 1. Without an axis: over everything, to a scalar.
Var sum(const Var& a);
Var sum(const Var& a, int axis, bool keepdim = false);
Var sum(const Var& a, const std::vector<int>& axes, bool keepdim = false);
Var mean(const Var& a);
Var mean(const Var& a, int axis, bool keepdim = false);
Var mean(const Var& a, const std::vector<int>& axes, bool keepdim = false);
// The gradient goes to the first maximum (minimum) of each slice.
Var max(const Var& a);
Var max(const Var& a, int axis, bool keepdim = false);
Var min(const Var& a);
Var min(const Var& a, int axis, bool keepdim = false);
// log Σ exp, stable; an all -inf slice gives -inf and zero gradient.
Var logsumexp(const Var& a, int axis, bool keepdim = false);

// ---- linear algebra (ops_linalg.cpp) ----------------------------------------
// op(a)·op(b) over the last two axes, op = transpose when the flag is set,
// with the leading (batch) axes broadcast. Both inputs need rank >= 2.
// a B×n×k, b B×k×m → B×n×m; a n×k, b B×k×m → B×n×m (a shared by the batch).
Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
// x·op(w) + bias, the bias added to every row: the fast twin of
// matmul(x, w, false, trans_w) + bias (what Linear and multi-head attention's
// projections compute), in one op. x …×k (the leading axes are rows), op(w)
// k×n, bias n → …×n. The bias is added to the product's rows in place: no
// second output tensor, one node instead of two.
Var matmul_bias(const Var& x, const Var& w, const Var& bias, bool trans_w = false);
// relu(x·op(w) + bias) in one op: the fast twin of relu(matmul_bias(…)), the
// first layer of a feed-forward block. The bias and the ReLU are applied in
// one pass over the product's rows, and the backward masks the gradient with
// the output (y > 0 exactly where x·op(w) + bias > 0): no pre-activation kept.
Var matmul_bias_relu(const Var& x, const Var& w, const Var& bias, bool trans_w = false);

// ---- shape (ops_shape.cpp) -------------------------------------------------
Var reshape(const Var& a, const std::vector<int64_t>& dims);  // one dim may be -1
Var reshape(const Var& a, std::initializer_list<int64_t> dims);  // reshape(x, {2, -1})
Var reshape(const Var& a, const Shape& shape);
Var transpose(const Var& a, int axis0, int axis1);
Var permute(const Var& a, const std::vector<int>& axes);  // out axis i = in axis axes[i]
// Elements start, start+step, ... < end along one axis; negative start/end
// count from the end, as in Python.
Var slice(const Var& a, int axis, int64_t start, int64_t end, int64_t step = 1);
Var narrow(const Var& a, int axis, int64_t start, int64_t length);
Var concat(const std::vector<Var>& parts, int axis);
Var stack(const std::vector<Var>& parts, int axis);
std::vector<Var> split(const Var& a, const std::vector<int64_t>& sizes, int axis);
Var expand(const Var& a, const Shape& shape);  // a's shape must broadcast to shape
Var unsqueeze(const Var& a, int axis);
Var squeeze(const Var& a, int axis);

// ---- indexing (ops_index.cpp) ------------------------------------------------
// Index tensors hold whole numbers stored as reals; an index out of range
// throws, naming the op, the index and the valid range.
// out[i][j][k] = a[i][index[i][j][k]][k] for axis 1 (torch.gather).
Var gather(const Var& a, int axis, const Tensor& index);
Var index_select(const Var& a, int axis, const std::vector<int64_t>& indices);
// Rows of `weight` (V×D) picked by `indices` (any shape) → indices.shape × D.
// With a padding index p, the row p receives no gradient (torch's padding_idx).
Var embedding(const Var& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);
// value where mask != 0 (mask broadcasts to a), a elsewhere.
Var masked_fill(const Var& a, const Tensor& mask, real value);
// cond != 0 ? a : b, all three broadcast.
Var where(const Tensor& cond, const Var& a, const Var& b);
// (one_hot has no gradient: use Var(one_hot(indices, n)) from tensor/ops.hpp.)

// ---- softmax, losses, dropout, sampling (ops_nn.cpp) ---------------------------
// Which positions of a softmax take part. keep: nonzero = takes part, 0 = left
// out (its weight is exactly 0). additive: added to the scores before the
// softmax (-inf leaves a position out). The mask broadcasts to the scores.
// A slice with every position left out gives all-zero weights and all-zero
// gradients, never NaN.
struct SoftmaxMask {
    enum class Kind { none, keep, additive };
    Kind kind = Kind::none;
    Tensor tensor;
    static SoftmaxMask keep(Tensor t) { return {Kind::keep, std::move(t)}; }
    static SoftmaxMask additive(Tensor t) { return {Kind::additive, std::move(t)}; }
};
// scores B×n×m, axis -1 → weights B×n×m, each row summing to 1 (or 0 if all left out).
// One kernel forward; the backward, z ⊙ (g − Σ g ⊙ z), written with tensor ops.
Var softmax(const Var& a, int axis, const SoftmaxMask& mask = {});
// The fast twin (what a module takes under Module::set_fast): the backward in
// one pass per slice (tensor softmax_backward). The same values up to rounding.
Var softmax_fused(const Var& a, int axis, const SoftmaxMask& mask = {});
// softmax's readable twin, without a mask: e^(a − max) / Σ e^(a − max),
// composed from autograd ops, so its backward is theirs. The same values and
// gradients as softmax() up to rounding (tests/test_autograd_values.cpp).
Var softmax_composed(const Var& a, int axis);
// Left-out positions give -inf.
Var log_softmax(const Var& a, int axis, const SoftmaxMask& mask = {});

// Cross-entropy from logits, fused log-softmax + negative log-likelihood:
// logits …×C (classes on the LAST axis, unlike PyTorch's axis 1), targets …
// (class indices). Positions whose target is ignore_index do not count; the
// result is the mean over the others (0, with zero gradient, if there are
// none). label_smoothing ε mixes the one-hot target with the uniform 1/C.
Var cross_entropy(const Var& logits, const Tensor& targets, int64_t ignore_index = -100,
                  real label_smoothing = 0);
// The composite twin (without smoothing): −mean of log_probs[target] over
// non-ignored positions; log_probs …×C from log_softmax.
Var nll_loss(const Var& log_probs, const Tensor& targets, int64_t ignore_index = -100);

// Inverted dropout: zeroes each element with probability p and scales the
// rest by 1/(1−p), with masks from `gen`. Identity when !training or p == 0.
Var dropout(const Var& a, real p, Generator& gen, bool training = true);

// One sample per row of probs …×K (last axis; rows need not be normalised,
// but need a positive sum): the indices …, as reals. No gradient.
Tensor sample_categorical(const Tensor& probs, Generator& gen);
// log probs[…, sample[…]]: the log-probability of a sample, with gradient
// (REINFORCE: ∇ log p(sample) · reward).
Var categorical_log_prob(const Var& probs, const Tensor& sample);

// ---- convolution and pooling (ops_conv.cpp) -----------------------------------
// A height and width; an int means both.
struct Size2 {
    int h, w;
    Size2(int both) : h(both), w(both) {}  // NOLINT: implicit on purpose: conv2d(x, w, b, 2)
    Size2(int h_, int w_) : h(h_), w(w_) {}
};
// im2col: input B×C×H×W → columns B×(C·kh·kw)×(Ho·Wo), torch's unfold layout;
// Ho = (H + 2·pad_h − kh)/stride_h + 1.
Var unfold(const Var& input, Size2 kernel, Size2 stride = 1, Size2 padding = 0);
// input B×C×H×W, weight O×C×kh×kw, bias O (or an undefined Var) → B×O×Ho×Wo,
// PyTorch's semantics; = weight(O×C·kh·kw) · unfold(input) + bias.
Var conv2d(const Var& input, const Var& weight, const Var& bias, Size2 stride = 1, Size2 padding = 0);
// The same in one op with a hand-written backward (less memory: no W·cols
// copy, the columns' gradient one image at a time); nn::Conv2d uses it.
Var conv2d_fused(const Var& input, const Var& weight, const Var& bias, Size2 stride = 1, Size2 padding = 0);
// max_pool2d(conv2d_fused(input, weight, bias, stride, padding), pool_kernel,
// pool_stride, pool_padding) in one op: each image's convolution is pooled
// while in cache, and neither the convolution's full output nor its gradient
// is ever stored. B×C×H×W → B×O×Hp×Wp.
Var conv2d_max_pool_fused(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding,
                          Size2 pool_kernel, Size2 pool_stride = 0, Size2 pool_padding = 0);
// relu(conv2d_max_pool_fused(...)), the ReLU in the same op (a conv → ReLU →
// max-pool block computes this: ReLU is monotone, so it commutes with the max).
Var conv2d_max_pool_relu_fused(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding,
                               Size2 pool_kernel, Size2 pool_stride = 0, Size2 pool_padding = 0);
// input B×C×H×W → B×C×Ho×Wo; stride 0 means the kernel size (PyTorch's
// default). max_pool2d pads with -inf, avg_pool2d with zeros, counted in the
// average (count_include_pad = true, PyTorch's default).
// max_pool2d loops over each window's elements by default; fast: 2×2 windows
// of stride 2 (most CNN encoders' pool) a row of windows at a time, which the
// compiler vectorises (16 windows at once with AVX-512), the same maxima and
// gradients, ties and NaN included (tests/test_autograd_values.cpp).
Var max_pool2d(const Var& input, Size2 kernel, Size2 stride = 0, Size2 padding = 0, bool fast = false);
Var avg_pool2d(const Var& input, Size2 kernel, Size2 stride = 0, Size2 padding = 0);

}  // namespace attn
