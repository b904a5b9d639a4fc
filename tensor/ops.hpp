// The tensor operations: plain functions that take tensors and return new
// ones. No gradients here (that is autograd/); these are the kernels the
// autograd ops call in their forward and backward passes.
//
// Every op checks its shapes and throws std::invalid_argument naming the op and
// the shapes it got, e.g. "add: shapes 2×3 and 4×3 do not broadcast".
// Element-wise binary ops broadcast as NumPy does (tensor/shape.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

// ---- element-wise, one input ---------------------------------------------
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor sign(const Tensor& a);  // -1, 0 or 1
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);  // numerically stable for large |a|
Tensor relu(const Tensor& a);
Tensor leaky_relu(const Tensor& a, real negative_slope);
Tensor gelu(const Tensor& a);      // exact: a·Φ(a), with the error function
Tensor softplus(const Tensor& a);  // log(1 + e^a), stable for large |a|
Tensor clamp(const Tensor& a, real lo, real hi);
Tensor pow(const Tensor& a, real exponent);
Tensor square(const Tensor& a);

// ---- element-wise, two inputs (broadcasting) ---------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
// Comparisons give 1 where true and 0 where false.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
// cond != 0 ? a : b, broadcasting all three.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// With a scalar.
Tensor add(const Tensor& a, real b);
Tensor mul(const Tensor& a, real b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, real b);
Tensor operator*(const Tensor& a, real b);
Tensor operator*(real a, const Tensor& b);

// ---- in place (the destination's shape never changes) -------------------
// a += b, with b broadcast to a's shape (b's shape must broadcast to a's).
void add_(Tensor& a, const Tensor& b);
// a += alpha * b, same shapes.
void axpy_(Tensor& a, real alpha, const Tensor& b);
void mul_(Tensor& a, real s);

// ---- reductions ----------------------------------------------------------
// Along one axis (negative counts from the end); keepdim keeps it as size 1.
Tensor sum(const Tensor& a, int axis, bool keepdim = false);
Tensor mean(const Tensor& a, int axis, bool keepdim = false);
Tensor max(const Tensor& a, int axis, bool keepdim = false);
Tensor min(const Tensor& a, int axis, bool keepdim = false);
// Index of the first maximum along the axis, stored as a real (exact below 2^24).
Tensor argmax(const Tensor& a, int axis, bool keepdim = false);
Tensor argmin(const Tensor& a, int axis, bool keepdim = false);
// log Σ exp along the axis, computed stably (max subtracted first). A slice
// that is all -inf gives -inf, never NaN.
Tensor logsumexp(const Tensor& a, int axis, bool keepdim = false);
// Along several axes at once.
Tensor sum(const Tensor& a, const std::vector<int>& axes, bool keepdim = false);
// Over everything: a rank-0 tensor.
Tensor sum(const Tensor& a);
Tensor mean(const Tensor& a);
Tensor max(const Tensor& a);
Tensor min(const Tensor& a);
// The inverse of broadcasting: sums `a` over the axes along which `shape` was
// broadcast to give a.shape(), and returns a tensor of `shape`. Used by every
// broadcasting op's backward. When a.shape() already equals `shape` it returns
// `a` itself (shared storage, no copy): clone() before writing into it.
Tensor sum_to(const Tensor& a, const Shape& shape);

// ---- shape ---------------------------------------------------------------
Tensor reshape(const Tensor& a, const std::vector<int64_t>& dims);  // shares storage
Tensor transpose(const Tensor& a, int axis0, int axis1);           // copies
Tensor permute(const Tensor& a, const std::vector<int>& axes);     // copies; out axis i = in axis axes[i]
// Elements start, start+step, ... < end along one axis (copies). Negative
// start/end count from the end, as in Python.
Tensor slice(const Tensor& a, int axis, int64_t start, int64_t end, int64_t step = 1);
Tensor concat(const std::vector<Tensor>& parts, int axis);
Tensor stack(const std::vector<Tensor>& parts, int axis);
// Pieces of the given sizes along one axis (they must add up to its length).
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int axis);
// Materialises a broadcast: a's shape must broadcast to `shape`.
Tensor expand(const Tensor& a, const Shape& shape);
// Inserts / removes a size-1 axis.
Tensor unsqueeze(const Tensor& a, int axis);
Tensor squeeze(const Tensor& a, int axis);

// ---- linear algebra ------------------------------------------------------
// Matrix product over the last two axes, with NumPy's batch broadcasting of
// the leading axes. trans_a / trans_b use a's / b's last two axes transposed,
// without materialising the transpose (they become the GEMM's flags).
// Rank-1 inputs are not promoted: both inputs must have rank >= 2.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// out = alpha · op(a)·op(b) + beta · out, where out already has the result's
// shape; lets backward passes accumulate straight into a gradient buffer.
void matmul_into(Tensor& out, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, real alpha,
                 real beta);

// ---- softmax ---------------------------------------------------------------
// Along one axis, max-subtracted. A slice that is all -inf (every key masked)
// gives all-zero weights, not NaN (and log_softmax gives -inf there).
Tensor softmax(const Tensor& a, int axis);
Tensor log_softmax(const Tensor& a, int axis);
// The gradient of softmax from its output z and the output's gradient g (same
// shape): z·(g − Σ g·z) along the axis, in one pass per slice.
Tensor softmax_backward(const Tensor& z, const Tensor& g, int axis);

// ---- indexing --------------------------------------------------------------
// Index tensors hold whole numbers stored as reals. An index out of range or
// not a whole number throws, naming the op, the index and the valid range.
// Picks slices of `a` along `axis`: out has a.shape() with that axis replaced
// by indices.size().
Tensor index_select(const Tensor& a, int axis, const std::vector<int64_t>& indices);
// out[i][j][k] = a[i][index[i][j][k]][k] for axis 1 (as torch.gather):
// index has a's rank and, off `axis`, sizes no larger than a's.
Tensor gather(const Tensor& a, int axis, const Tensor& index);
// The inverse of gather for gradients: out (of `shape`) starts at zero and
// out[..index..] += src.
Tensor scatter_add(const Shape& shape, int axis, const Tensor& index, const Tensor& src);
// indices (any shape) → indices.shape() × num_classes of 0/1.
Tensor one_hot(const Tensor& indices, int64_t num_classes);
// Where mask != 0 (mask broadcasts to a), the value; elsewhere a.
Tensor masked_fill(const Tensor& a, const Tensor& mask, real value);

// ---- comparisons for tests -------------------------------------------------
// True when shapes are equal and |a-b| <= atol + rtol·|b| everywhere.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace attn
