// Reductions: ops that combine the values along one or more axes.
//
//   along one axis   sum mean max min argmax argmin logsumexp   (keepdim)
//   softmax family   softmax log_softmax                         (same shape)
//   several / all    sum(axes), sum mean max min of everything, sum_to
//
// Reducing axis `k` of a contiguous tensor views it as outer × n × inner:
// outer = the product of the sizes before k, n = the size of k, inner = the
// product after k. Each output value combines the n elements
//     a[o·n·inner + i·inner + j],   i = 0 … n-1,
// which are `inner` apart. On the last axis (inner = 1) they are contiguous,
// the common and fast case.
//
// Numerics. Sums accumulate in double. logsumexp and softmax subtract the
// maximum first, so that no exponential overflows:
//     logsumexp(x) = m + log Σ exp(x_i - m),     m = max_i x_i
//     softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m)
// A slice that is entirely -inf (every key masked) has no valid m: there
// softmax gives all zeros (not NaN), logsumexp gives -inf and log_softmax
// gives -inf everywhere (the log of those zero weights).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/row_blocks.hpp"

namespace attn {
namespace {

constexpr real kInf = std::numeric_limits<real>::infinity();

void check_defined(const Tensor& t, const char* op) {
    if (!t.defined()) throw std::invalid_argument(std::string(op) + ": the input tensor is undefined");
}

// The outer × n × inner view of a reduction along `axis` (already normalised).
struct AxisView {
    int64_t outer = 1, n = 1, inner = 1;
};

AxisView axis_view(const Shape& s, int axis) {
    AxisView v;
    for (int i = 0; i < s.rank(); ++i) {
        if (i < axis) v.outer *= s[i];
        if (i > axis) v.inner *= s[i];
    }
    v.n = s[axis];
    return v;
}

Shape reduced_shape(const Shape& s, int axis, bool keepdim) { return keepdim ? s.with(axis, 1) : s.without(axis); }

void check_not_empty(const Shape& s, int axis, const char* op) {
    if (s[axis] == 0)
        throw std::invalid_argument(std::string(op) + ": cannot reduce over axis " + std::to_string(axis) +
                                    " of shape " + s.str() + ", which is empty");
}

// Σ x[i·stride], in double, with four independent accumulators so that the
// additions overlap in the pipeline.
double slice_sum(const real* x, int64_t n, int64_t stride) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i * stride];
        s1 += x[(i + 1) * stride];
        s2 += x[(i + 2) * stride];
        s3 += x[(i + 3) * stride];
    }
    for (; i < n; ++i) s0 += x[i * stride];
    return (s0 + s1) + (s2 + s3);
}

// The maximum of a slice; NaN if any element is NaN (a NaN is never hidden).
real slice_max(const real* x, int64_t n, int64_t stride) {
    real m = -kInf;
    for (int64_t i = 0; i < n; ++i) {
        const real v = x[i * stride];
        if (v > m || std::isnan(v)) m = v;
        if (std::isnan(m)) break;
    }
    return m;
}

// The same two over a contiguous run, for the rows of softmax: eight
// independent lanes, each taking every eighth element, then combined. A
// single running max or sum is one long chain of dependent operations (~4
// cycles an element for the double adds); eight chains overlap, and the
// compiler can put the lanes in vector registers. NaN is as sticky as above:
// a lane that meets one keeps it, and so does the combination.
real run_max(const real* x, int64_t n) {
    constexpr int kLanes = 8;
    real m[kLanes];
    for (real& v : m) v = -kInf;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
            const real v = x[i + j];
            m[j] = (v > m[j] || std::isnan(v)) ? v : m[j];
        }
    for (; i < n; ++i)
        if (x[i] > m[0] || std::isnan(x[i])) m[0] = std::isnan(m[0]) ? m[0] : x[i];
    real r = m[0];
    for (int j = 1; j < kLanes; ++j)
        if (m[j] > r || std::isnan(m[j])) r = std::isnan(r) ? r : m[j];
    return r;
}

// Σ x[i]·w[i] in double (w = nullptr: Σ x[i]), in eight lanes as run_max.
double run_dot(const real* x, const real* w, int64_t n) {
    constexpr int kLanes = 8;
    double s[kLanes] = {};
    int64_t i = 0;
    if (w) {
        for (; i + kLanes <= n; i += kLanes)
            for (int j = 0; j < kLanes; ++j) s[j] += static_cast<double>(x[i + j]) * w[i + j];
        for (; i < n; ++i) s[0] += static_cast<double>(x[i]) * w[i];
    } else {
        for (; i + kLanes <= n; i += kLanes)
            for (int j = 0; j < kLanes; ++j) s[j] += x[i + j];
        for (; i < n; ++i) s[0] += x[i];
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// out[o, j] = kernel(pointer to the slice's first element, n, stride = inner),
// for every slice; slices are split across threads when the tensor is large.
template <class Kernel>
Tensor reduce_slices(const Tensor& a, int axis, bool keepdim, Kernel kernel) {
    const AxisView v = axis_view(a.shape(), axis);
    Tensor out = Tensor::empty(reduced_shape(a.shape(), axis, keepdim));
    const real* in = a.data();
    real* po = out.data();
    const int64_t grain = parallel_grain(v.n);
    parallel_for(0, v.outer * v.inner, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s) {
            const int64_t o = s / v.inner, j = s % v.inner;
            po[s] = kernel(in + o * v.n * v.inner + j, v.n, v.inner);
        }
    });
    return out;
}

// Same-shape ops along an axis (softmax): kernel(in slice, out slice, n, stride).
template <class Kernel>
Tensor transform_slices(const Tensor& a, int axis, Kernel kernel) {
    const AxisView v = axis_view(a.shape(), axis);
    Tensor out = Tensor::empty(a.shape());
    const real* in = a.data();
    real* po = out.data();
    const int64_t grain = parallel_grain(v.n);
    parallel_for(0, v.outer * v.inner, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s) {
            const int64_t base = (s / v.inner) * v.n * v.inner + s % v.inner;
            kernel(in + base, po + base, v.n, v.inner);
        }
    });
    return out;
}

// sums[j] += row[j]: a function of its own with distinct arrays, so that it
// vectorises.
void add_row(const real* __restrict row, int64_t n, real* __restrict sums) {
    for (int64_t j = 0; j < n; ++j) sums[j] += row[j];
}

// out[o, j] = Σ_i a[o, i, j]. On the last axis each output is one contiguous
// row sum; otherwise whole rows of `inner` values are added at once
// (out[o, :] += a[o, i, :]), which walks memory in order — the bias gradient
// sum over B·n rows of a B·n×d tensor is this case. Many rows are summed in
// the fixed blocks of tensor/row_blocks.hpp, split over the threads by
// blocks; few (wide) rows by columns, each column down all its rows.
void sum_axis_into(const real* in, const AxisView& v, real* out) {
    if (v.inner == 1) {
        const int64_t grain = parallel_grain(v.n);
        parallel_for(0, v.outer, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t o = lo; o < hi; ++o) out[o] = static_cast<real>(slice_sum(in + o * v.n, v.n, 1));
        });
        return;
    }
    if (row_blocks(v.n, v.inner) > 1) {
        for (int64_t o = 0; o < v.outer; ++o) {
            const real* slab = in + o * v.n * v.inner;
            sum_rows_in_blocks(v.n, v.inner, out + o * v.inner,
                               [slab, w = v.inner](int64_t i, real* sums) { add_row(slab + i * w, w, sums); });
        }
        return;
    }
    const int64_t grain = parallel_grain(v.n);
    parallel_for(0, v.outer * v.inner, grain, [&](int64_t lo, int64_t hi) {
        // This chunk owns outputs [lo, hi): for each outer index o it touches,
        // the columns j0 … j1 of that row.
        for (int64_t o = lo / v.inner; o * v.inner < hi; ++o) {
            const int64_t j0 = (lo > o * v.inner ? lo : o * v.inner) - o * v.inner;
            const int64_t j1 = (hi < (o + 1) * v.inner ? hi : (o + 1) * v.inner) - o * v.inner;
            real* dst = out + o * v.inner;
            for (int64_t j = j0; j < j1; ++j) dst[j] = 0;
            for (int64_t i = 0; i < v.n; ++i) add_row(in + (o * v.n + i) * v.inner + j0, j1 - j0, dst + j0);
        }
    });
}

}  // namespace

// ---- along one axis ----------------------------------------------------------

Tensor sum(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "sum");
    const int ax = a.shape().normalize_axis(axis, "sum");
    Tensor out = Tensor::empty(reduced_shape(a.shape(), ax, keepdim));
    sum_axis_into(a.data(), axis_view(a.shape(), ax), out.data());
    return out;
}

// mean = sum / n. An empty axis throws (0/0 would be a silent NaN).
Tensor mean(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "mean");
    const int ax = a.shape().normalize_axis(axis, "mean");
    check_not_empty(a.shape(), ax, "mean");
    Tensor out = sum(a, ax, keepdim);
    mul_(out, real(1) / static_cast<real>(a.shape()[ax]));
    return out;
}

Tensor max(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "max");
    const int ax = a.shape().normalize_axis(axis, "max");
    check_not_empty(a.shape(), ax, "max");
    return reduce_slices(a, ax, keepdim, slice_max);
}

Tensor min(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "min");
    const int ax = a.shape().normalize_axis(axis, "min");
    check_not_empty(a.shape(), ax, "min");
    return reduce_slices(a, ax, keepdim, [](const real* x, int64_t n, int64_t stride) {
        real m = kInf;
        for (int64_t i = 0; i < n; ++i) {
            const real v = x[i * stride];
            if (v < m || std::isnan(v)) m = v;
            if (std::isnan(m)) break;
        }
        return m;
    });
}

// The index of the first maximum (a NaN counts as the maximum, as in NumPy).
Tensor argmax(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "argmax");
    const int ax = a.shape().normalize_axis(axis, "argmax");
    check_not_empty(a.shape(), ax, "argmax");
    return reduce_slices(a, ax, keepdim, [](const real* x, int64_t n, int64_t stride) {
        int64_t best = 0;
        for (int64_t i = 1; i < n && !std::isnan(x[best * stride]); ++i)
            if (x[i * stride] > x[best * stride] || std::isnan(x[i * stride])) best = i;
        return static_cast<real>(best);
    });
}

Tensor argmin(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "argmin");
    const int ax = a.shape().normalize_axis(axis, "argmin");
    check_not_empty(a.shape(), ax, "argmin");
    return reduce_slices(a, ax, keepdim, [](const real* x, int64_t n, int64_t stride) {
        int64_t best = 0;
        for (int64_t i = 1; i < n && !std::isnan(x[best * stride]); ++i)
            if (x[i * stride] < x[best * stride] || std::isnan(x[i * stride])) best = i;
        return static_cast<real>(best);
    });
}

// logsumexp(x) = m + log Σ_i exp(x_i - m), m = max_i x_i. When m is ±inf the
// answer is m itself (all -inf → -inf; any +inf → +inf), and an empty axis
// gives log 0 = -inf.
Tensor logsumexp(const Tensor& a, int axis, bool keepdim) {
    check_defined(a, "logsumexp");
    const int ax = a.shape().normalize_axis(axis, "logsumexp");
    return reduce_slices(a, ax, keepdim, [](const real* x, int64_t n, int64_t stride) {
        const real m = slice_max(x, n, stride);
        if (std::isinf(m) || std::isnan(m)) return m;
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += std::exp(x[i * stride] - m);
        return static_cast<real>(m + std::log(s));
    });
}

// ---- softmax -------------------------------------------------------------------

// softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m). An all -inf slice → zeros.
Tensor softmax(const Tensor& a, int axis) {
    check_defined(a, "softmax");
    const int ax = a.shape().normalize_axis(axis, "softmax");
    return transform_slices(a, ax, [](const real* x, real* y, int64_t n, int64_t stride) {
        const real m = stride == 1 ? run_max(x, n) : slice_max(x, n, stride);
        if (m == -kInf) {
            for (int64_t i = 0; i < n; ++i) y[i * stride] = 0;
            return;
        }
        double s = 0;
        if (stride == 1) {  // the usual last axis: e^(x − m) for the whole row at once
            for (int64_t i = 0; i < n; ++i) y[i] = x[i] - m;
            exp_into(y, y, n);
            s = run_dot(y, nullptr, n);
        } else {
            for (int64_t i = 0; i < n; ++i) s += y[i * stride] = exp_real(x[i * stride] - m);
        }
        const real inv = static_cast<real>(1 / s);
        for (int64_t i = 0; i < n; ++i) y[i * stride] *= inv;
    });
}

// The gradient of softmax along `axis`, from its output z and the gradient g
// of the output:
//
//     ∂L/∂x_i = z_i·(g_i − Σ_j g_j·z_j)      (Σ over the slice)
//
// One pass per slice: the dot product, then the result; where the composite
// mul(z, sub(g, sum(mul(g, z)))) makes two temporaries the size of z and
// reads it four times (W6's 128×1024×1024 weights: 512 MiB each).
Tensor softmax_backward(const Tensor& z, const Tensor& g, int axis) {
    check_defined(z, "softmax_backward");
    check_defined(g, "softmax_backward");
    if (z.shape() != g.shape())
        throw std::invalid_argument("softmax_backward: the output " + z.shape().str() + " and its gradient " +
                                    g.shape().str() + " need the same shape");
    const int ax = z.shape().normalize_axis(axis, "softmax_backward");
    const AxisView v = axis_view(z.shape(), ax);
    Tensor out = Tensor::empty(z.shape());
    const real *pz = z.data(), *pg = g.data();
    real* po = out.data();
    parallel_for(0, v.outer * v.inner, parallel_grain(v.n), [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s) {
            const int64_t base = (s / v.inner) * v.n * v.inner + s % v.inner, st = v.inner;
            const real *zs = pz + base, *gs = pg + base;
            real* os = po + base;
            double dot = 0;
            if (st == 1) {
                dot = run_dot(gs, zs, v.n);
            } else {
                for (int64_t i = 0; i < v.n; ++i) dot += static_cast<double>(gs[i * st]) * zs[i * st];
            }
            const real d = static_cast<real>(dot);
            for (int64_t i = 0; i < v.n; ++i) os[i * st] = zs[i * st] * (gs[i * st] - d);
        }
    });
    return out;
}

// log_softmax(x)_i = x_i - logsumexp(x). Subtracting in log space keeps the
// digits that log(softmax(x)) would lose for tiny weights. An all -inf slice
// gives -inf everywhere (log 0), not NaN.
Tensor log_softmax(const Tensor& a, int axis) {
    check_defined(a, "log_softmax");
    const int ax = a.shape().normalize_axis(axis, "log_softmax");
    return transform_slices(a, ax, [](const real* x, real* y, int64_t n, int64_t stride) {
        const real m = slice_max(x, n, stride);
        if (m == -kInf) {
            for (int64_t i = 0; i < n; ++i) y[i * stride] = -kInf;
            return;
        }
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += std::exp(x[i * stride] - m);
        // (x_i - m) - log s rather than x_i - (m + log s): for large x the sum
        // m + log s would round away the digits of log s.
        const real log_s = static_cast<real>(std::log(s));
        for (int64_t i = 0; i < n; ++i) y[i * stride] = (x[i * stride] - m) - log_s;
    });
}

// ---- several axes, everything, sum_to --------------------------------------------

// Sums over a set of axes. Neighbouring axes that are all reduced (or all kept)
// are merged first, so B×n×d summed over {0, 1} is one pass over (B·n)×d.
Tensor sum(const Tensor& a, const std::vector<int>& axes, bool keepdim) {
    check_defined(a, "sum");
    const Shape& s = a.shape();
    bool reduce[Shape::kMaxRank] = {};
    for (int axis : axes) {
        const int ax = s.normalize_axis(axis, "sum");
        if (reduce[ax])
            throw std::invalid_argument("sum: axis " + std::to_string(axis) + " appears twice in the axes for shape " +
                                        s.str());
        reduce[ax] = true;
    }
    Shape merged, result;
    bool merged_reduce[Shape::kMaxRank] = {};
    for (int i = 0; i < s.rank(); ++i) {
        if (keepdim || !reduce[i]) result.push_back(reduce[i] ? 1 : s[i]);
        if (i > 0 && reduce[i] == reduce[i - 1]) {
            merged[merged.rank() - 1] *= s[i];
        } else {
            merged_reduce[merged.rank()] = reduce[i];
            merged.push_back(s[i]);
        }
    }
    if (axes.empty()) return a.clone();
    Tensor t = a.reshape(merged);
    for (int i = merged.rank() - 1; i >= 0; --i)
        if (merged_reduce[i]) t = sum(t, i, true);
    return t.reshape(result);
}

// Σ of every element, as a rank-0 tensor. The sum is taken over fixed blocks
// whose partial sums are added in order, so the result has the same bits
// whatever the number of threads.
Tensor sum(const Tensor& a) {
    check_defined(a, "sum");
    const int64_t n = a.numel(), blocks = (n + kParallelGrain - 1) / kParallelGrain;
    std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
    const real* x = a.data();
    parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) {
            const int64_t start = b * kParallelGrain, len = (start + kParallelGrain < n ? kParallelGrain : n - start);
            partial[static_cast<size_t>(b)] = slice_sum(x + start, len, 1);
        }
    });
    double total = 0;
    for (double p : partial) total += p;
    return Tensor::scalar(static_cast<real>(total));
}

Tensor mean(const Tensor& a) {
    check_defined(a, "mean");
    if (a.numel() == 0) throw std::invalid_argument("mean: cannot take the mean of shape " + a.shape().str() +
                                                    ", which is empty");
    Tensor out = sum(a);
    out[0] /= static_cast<real>(a.numel());
    return out;
}

Tensor max(const Tensor& a) {
    check_defined(a, "max");
    if (a.numel() == 0) throw std::invalid_argument("max: cannot reduce shape " + a.shape().str() + ", which is empty");
    return max(a.reshape(Shape{a.numel()}), 0, false);
}

Tensor min(const Tensor& a) {
    check_defined(a, "min");
    if (a.numel() == 0) throw std::invalid_argument("min: cannot reduce shape " + a.shape().str() + ", which is empty");
    return min(a.reshape(Shape{a.numel()}), 0, false);
}

// The inverse of broadcasting `shape` up to a.shape(): sum over the leading
// axes `shape` lacks and over the axes where `shape` has size 1 but a does
// not. When the shapes are already equal, `a` itself is returned (no copy).
Tensor sum_to(const Tensor& a, const Shape& shape) {
    check_defined(a, "sum_to");
    if (a.shape() == shape) return a;
    const int lead = a.rank() - shape.rank();
    bool ok = lead >= 0;
    for (int i = 0; ok && i < shape.rank(); ++i) ok = shape[i] == 1 || shape[i] == a.shape()[i + lead];
    if (!ok) throw std::invalid_argument("sum_to: shape " + shape.str() + " does not broadcast to " + a.shape().str());
    std::vector<int> axes;
    for (int i = 0; i < a.rank(); ++i)
        if (i < lead || (shape[i - lead] == 1 && a.shape()[i] != 1)) axes.push_back(i);
    return sum(a, axes, true).reshape(shape);
}

}  // namespace attn
