// Shape ops: forward and backward side by side.
//
// None of these computes anything: each moves elements around, so each
// backward moves the gradient back the opposite way (reshape back, transpose
// back, put a slice's gradient back where the slice came from, sum an expanded
// axis back down).
#include <algorithm>
#include <string>

#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

// ---- views -----------------------------------------------------------------------

// z = a viewed with new dimensions (same elements, same order)      ∂L/∂a = g viewed as a
Var reshape(const Var& a, const Shape& shape) {
    const ProfileScope scope("reshape");
    return record("reshape", a.value().reshape(shape), {a},
                  [shape = a.shape()](Backward& bw) { bw.accumulate(0, bw.grad().reshape(shape)); });
}

Var reshape(const Var& a, const std::vector<int64_t>& dims) { return reshape(a, a.value().reshape(dims).shape()); }
Var reshape(const Var& a, std::initializer_list<int64_t> dims) { return reshape(a, std::vector<int64_t>(dims)); }

// Inserting or removing a size-1 axis is a reshape.
Var unsqueeze(const Var& a, int axis) { return reshape(a, unsqueeze(a.value(), axis).shape()); }
Var squeeze(const Var& a, int axis) { return reshape(a, squeeze(a.value(), axis).shape()); }

// ---- reordering axes -----------------------------------------------------------------

// z = a with axes axis0 and axis1 swapped        ∂L/∂a = g with them swapped back
Var transpose(const Var& a, int axis0, int axis1) {
    const ProfileScope scope("transpose");
    return record("transpose", transpose(a.value(), axis0, axis1), {a},
                  [axis0, axis1](Backward& bw) { bw.accumulate(0, transpose(bw.grad(), axis0, axis1)); });
}

// z axis i = a axis p[i]                         ∂L/∂a = g permuted by p⁻¹, p⁻¹[p[i]] = i
Var permute(const Var& a, const std::vector<int>& axes) {
    const ProfileScope scope("permute");
    Tensor z = permute(a.value(), axes);  // checks that `axes` is a permutation
    std::vector<int> inverse(axes.size());
    for (size_t i = 0; i < axes.size(); ++i)
        inverse[static_cast<size_t>(a.shape().normalize_axis(axes[i], "permute"))] = static_cast<int>(i);
    return record("permute", std::move(z), {a},
                  [inverse](Backward& bw) { bw.accumulate(0, permute(bw.grad(), inverse)); });
}

// z = a materialised at a broadcast shape        ∂L/∂a = g summed over the broadcast axes
Var expand(const Var& a, const Shape& shape) {
    const ProfileScope scope("expand");
    return record("expand", expand(a.value(), shape), {a},
                  [](Backward& bw) { bw.accumulate(0, bw.grad()); });  // accumulate sums it back
}

// ---- pieces along an axis ----------------------------------------------------------------

// z[…, k, …] = a[…, start + k·step, …]           ∂L/∂a[…, start + k·step, …] += g[…, k, …], 0 elsewhere
Var slice(const Var& a, int axis, int64_t start, int64_t end, int64_t step) {
    const ProfileScope scope("slice");
    const int ax = a.shape().normalize_axis(axis, "slice");
    Tensor z = slice(a.value(), ax, start, end, step);
    const int64_t n = a.shape()[ax];
    const int64_t first = start < 0 ? std::max<int64_t>(start + n, 0) : std::min(start, n);  // Python's rule
    std::vector<int64_t> picked = strided_indices(first, step, z.shape()[ax]);
    return record("slice", std::move(z), {a}, [ax, picked = std::move(picked)](Backward& bw) {
                      index_add_(bw.grad_buffer(0), ax, picked, bw.grad());
                  });
}

Var narrow(const Var& a, int axis, int64_t start, int64_t length) {
    const int ax = a.shape().normalize_axis(axis, "narrow");
    if (start < 0 || length < 0 || start + length > a.shape()[ax])
        throw std::out_of_range("narrow: [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                ") is out of range for axis " + std::to_string(ax) + " of shape " +
                                a.shape().str());
    return slice(a, ax, start, start + length);
}

// z = [a₀ a₁ …] along axis                       ∂L/∂aₖ = the k-th piece of g along axis
Var concat(const std::vector<Var>& parts, int axis) {
    const ProfileScope scope("concat");
    std::vector<Tensor> values;
    std::vector<int64_t> sizes;
    for (const Var& p : parts) values.push_back(p.value());
    Tensor z = concat(values, axis);  // checks the shapes
    const int ax = z.shape().normalize_axis(axis, "concat");
    for (const Tensor& v : values) sizes.push_back(v.shape()[ax]);
    return record("concat", std::move(z), parts, [ax, sizes](Backward& bw) {
        std::vector<Tensor> pieces = split(bw.grad(), sizes, ax);
        for (size_t k = 0; k < pieces.size(); ++k)
            if (bw.needs(static_cast<int>(k))) bw.accumulate(static_cast<int>(k), std::move(pieces[k]));
    });
}

// z = the aₖ stacked along a new axis            ∂L/∂aₖ = g[…, k, …] (that axis removed)
Var stack(const std::vector<Var>& parts, int axis) {
    const ProfileScope scope("stack");
    std::vector<Tensor> values;
    for (const Var& p : parts) values.push_back(p.value());
    Tensor z = stack(values, axis);  // checks the shapes
    const int ax = z.shape().normalize_axis(axis, "stack");
    return record("stack", std::move(z), parts, [ax, count = parts.size()](Backward& bw) {
        std::vector<Tensor> pieces = split(bw.grad(), std::vector<int64_t>(count, 1), ax);
        for (size_t k = 0; k < count; ++k)
            if (bw.needs(static_cast<int>(k))) bw.accumulate(static_cast<int>(k), squeeze(pieces[k], ax));
    });
}

// zₖ = the k-th piece of a along axis            ∂L/∂a[piece k] += gₖ (each piece is its own node)
std::vector<Var> split(const Var& a, const std::vector<int64_t>& sizes, int axis) {
    const ProfileScope scope("split");
    const int ax = a.shape().normalize_axis(axis, "split");
    std::vector<Tensor> pieces = split(a.value(), sizes, ax);  // checks the sizes
    std::vector<Var> out;
    int64_t offset = 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
        out.push_back(record("split", std::move(pieces[k]), {a},
                             [ax, picked = strided_indices(offset, 1, sizes[k])](Backward& bw) {
                                 index_add_(bw.grad_buffer(0), ax, picked, bw.grad());
                             }));
        offset += sizes[k];
    }
    return out;
}

}  // namespace attn
