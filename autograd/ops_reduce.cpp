// Reductions: forward and backward side by side.
//
// A reduction maps a (shape S) to z (S with the reduced axes removed, or kept
// as size 1 with keepdim). Every backward first views g = ∂L/∂z with the
// reduced axes as size 1 ("keepdim shape"), then spreads it back over S.
#include <algorithm>
#include <string>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

// S with each of `axes` set to 1: the shape of a keepdim reduction.
Shape keepdim_shape(const Shape& s, const std::vector<int>& axes) {
    Shape out = s;
    for (int axis : axes) out[axis] = 1;
    return out;
}

std::vector<int> normalized_axes(const Shape& s, const std::vector<int>& axes, const char* op) {
    std::vector<int> out;
    for (int axis : axes) out.push_back(s.normalize_axis(axis, op));
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end())
        throw std::invalid_argument(std::string(op) + ": an axis is listed twice for shape " + s.str());
    return out;
}

}  // namespace

// ---- sum and mean ---------------------------------------------------------------

// z = Σᵢ aᵢ                    ∂z/∂aᵢ = 1
Var sum(const Var& a) {
    const ProfileScope scope("sum");
    return record("sum", sum(a.value()), {a}, [shape = a.shape()](Backward& bw) {
        bw.accumulate(0, expand(bw.grad(), shape));
    });
}

// z = Σ over `axes` of a       ∂z/∂a = 1, broadcast back over the reduced axes
Var sum(const Var& a, const std::vector<int>& axes, bool keepdim) {
    const ProfileScope scope("sum");
    const std::vector<int> ax = normalized_axes(a.shape(), axes, "sum");
    return record("sum", sum(a.value(), ax, keepdim), {a},
                  [shape = a.shape(), keep = keepdim_shape(a.shape(), ax)](Backward& bw) {
                      bw.accumulate(0, expand(bw.grad().reshape(keep), shape));
                  });
}

Var sum(const Var& a, int axis, bool keepdim) { return sum(a, std::vector<int>{axis}, keepdim); }

// z = (1/n) Σᵢ aᵢ              ∂z/∂aᵢ = 1/n
Var mean(const Var& a) {
    const ProfileScope scope("mean");
    const real inv_n = real(1) / static_cast<real>(a.numel());
    return record("mean", mean(a.value()), {a}, [shape = a.shape(), inv_n](Backward& bw) {
        bw.accumulate(0, expand(mul(bw.grad(), inv_n), shape));
    });
}

// z = (1/n) Σ over `axes`, n = the number of elements reduced into each z   ∂z/∂a = 1/n
Var mean(const Var& a, const std::vector<int>& axes, bool keepdim) {
    const ProfileScope scope("mean");
    const std::vector<int> ax = normalized_axes(a.shape(), axes, "mean");
    int64_t n = 1;
    for (int axis : ax) n *= a.shape()[axis];
    const real inv_n = real(1) / static_cast<real>(n);
    return record("mean", mul(sum(a.value(), ax, keepdim), inv_n), {a},
                  [shape = a.shape(), keep = keepdim_shape(a.shape(), ax), inv_n](Backward& bw) {
                      bw.accumulate(0, expand(mul(bw.grad().reshape(keep), inv_n), shape));
                  });
}

Var mean(const Var& a, int axis, bool keepdim) { return mean(a, std::vector<int>{axis}, keepdim); }

// ---- max and min ------------------------------------------------------------------

// z = max along axis           ∂z/∂aᵢ = 1 at the first maximum of the slice, 0 elsewhere
Var max(const Var& a, int axis, bool keepdim) {
    const ProfileScope scope("max");
    const int ax = a.shape().normalize_axis(axis, "max");
    Tensor where_max = argmax(a.value(), ax, /*keepdim=*/true);
    return record("max", max(a.value(), ax, keepdim), {a},
                  [shape = a.shape(), ax, where_max](Backward& bw) {
                      bw.accumulate(0, scatter_add(shape, ax, where_max, bw.grad().reshape(where_max.shape())));
                  });
}

// z = min along axis           ∂z/∂aᵢ = 1 at the first minimum of the slice, 0 elsewhere
Var min(const Var& a, int axis, bool keepdim) {
    const ProfileScope scope("min");
    const int ax = a.shape().normalize_axis(axis, "min");
    Tensor where_min = argmin(a.value(), ax, /*keepdim=*/true);
    return record("min", min(a.value(), ax, keepdim), {a},
                  [shape = a.shape(), ax, where_min](Backward& bw) {
                      bw.accumulate(0, scatter_add(shape, ax, where_min, bw.grad().reshape(where_min.shape())));
                  });
}

// Over everything: the same ops on a flattened view, to a scalar.
Var max(const Var& a) { return reshape(max(reshape(a, {-1}), 0), Shape{}); }
Var min(const Var& a) { return reshape(min(reshape(a, {-1}), 0), Shape{}); }

// ---- logsumexp --------------------------------------------------------------------

// z = ln Σⱼ e^(aⱼ) along axis  ∂z/∂aᵢ = e^(aᵢ − z) = softmax(a)ᵢ  (0 for an all −∞ slice)
Var logsumexp(const Var& a, int axis, bool keepdim) {
    const ProfileScope scope("logsumexp");
    const int ax = a.shape().normalize_axis(axis, "logsumexp");
    return record("logsumexp", logsumexp(a.value(), ax, keepdim), {a}, [a = a.value(), ax](Backward& bw) {
        bw.accumulate(0, mul(bw.grad().reshape(a.shape().with(ax, 1)), softmax(a, ax)));
    });
}

}  // namespace attn
