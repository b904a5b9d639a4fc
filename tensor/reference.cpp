#include "tensor/reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/ops.hpp"

namespace attn::reference {

namespace {

// The multi-index of flat index `flat` in `shape` (row-major), into idx.
void unravel(int64_t flat, const Shape& shape, std::vector<int64_t>& idx) {
    idx.assign(static_cast<size_t>(shape.rank()), 0);
    for (int i = shape.rank() - 1; i >= 0; --i) {
        idx[static_cast<size_t>(i)] = flat % shape[i];
        flat /= shape[i];
    }
}

// The flat index in `in` of the output's multi-index `idx`, broadcast: the
// trailing axes line up, a size-1 axis of `in` is read at 0.
int64_t broadcast_index(const std::vector<int64_t>& idx, const Shape& in) {
    const int shift = static_cast<int>(idx.size()) - in.rank();
    int64_t flat = 0;
    for (int i = 0; i < in.rank(); ++i) flat = flat * in[i] + (in[i] == 1 ? 0 : idx[static_cast<size_t>(i + shift)]);
    return flat;
}

// The slices along `axis` of shape s: slice o (o running over the shape
// without that axis) holds the n elements first(o) + k·inner, k < n.
struct Slices {
    int64_t n, inner = 1;
    Slices(const Shape& s, int axis) : n(s[axis]) {
        for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
    }
    int64_t first(int64_t o) const { return (o / inner) * n * inner + o % inner; }
};

Shape reduced(const Shape& s, int axis, bool keepdim) { return keepdim ? s.with(axis, 1) : s.without(axis); }

}  // namespace

Tensor binary(const Tensor& a, const Tensor& b, real (*f)(real, real)) {
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), "reference::binary");
    Tensor out = Tensor::empty(shape);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < out.numel(); ++i) {
        unravel(i, shape, idx);
        out[i] = f(a[broadcast_index(idx, a.shape())], b[broadcast_index(idx, b.shape())]);
    }
    return out;
}

Tensor unary(const Tensor& a, real (*f)(real)) {
    Tensor out = Tensor::empty(a.shape());
    for (int64_t i = 0; i < a.numel(); ++i) out[i] = f(a[i]);
    return out;
}

Tensor sum(const Tensor& a, int axis, bool keepdim) {
    const int ax = a.shape().normalize_axis(axis, "reference::sum");
    const Slices slices(a.shape(), ax);
    Tensor out = Tensor::empty(reduced(a.shape(), ax, keepdim));
    for (int64_t o = 0; o < out.numel(); ++o) {
        double total = 0;
        for (int64_t k = 0; k < slices.n; ++k) total += a[slices.first(o) + k * slices.inner];
        out[o] = static_cast<real>(total);
    }
    return out;
}

Tensor max(const Tensor& a, int axis, bool keepdim) {
    const int ax = a.shape().normalize_axis(axis, "reference::max");
    const Slices slices(a.shape(), ax);
    Tensor out = Tensor::empty(reduced(a.shape(), ax, keepdim));
    for (int64_t o = 0; o < out.numel(); ++o) {
        real best = -std::numeric_limits<real>::infinity();
        for (int64_t k = 0; k < slices.n && !std::isnan(best); ++k) {
            const real v = a[slices.first(o) + k * slices.inner];
            if (v > best || std::isnan(v)) best = v;  // a NaN wins, as in PyTorch
        }
        out[o] = best;
    }
    return out;
}

Tensor softmax(const Tensor& a, int axis) {
    const int ax = a.shape().normalize_axis(axis, "reference::softmax");
    const Slices slices(a.shape(), ax);
    const Tensor m = reference::max(a, ax, /*keepdim=*/false);
    Tensor out = Tensor::empty(a.shape());
    for (int64_t o = 0; o < m.numel(); ++o) {
        const int64_t first = slices.first(o), step = slices.inner;
        if (m[o] == -std::numeric_limits<real>::infinity()) {  // every element −∞: zeros
            for (int64_t k = 0; k < slices.n; ++k) out[first + k * step] = 0;
            continue;
        }
        double total = 0;
        for (int64_t k = 0; k < slices.n; ++k) total += std::exp(static_cast<double>(a[first + k * step] - m[o]));
        for (int64_t k = 0; k < slices.n; ++k)
            out[first + k * step] = static_cast<real>(std::exp(static_cast<double>(a[first + k * step] - m[o])) / total);
    }
    return out;
}

}  // namespace attn::reference
