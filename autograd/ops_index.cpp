// Indexing ops: forward and backward side by side.
//
// Picking elements is linear, so every backward is the adjoint pick: the
// gradient of each picked element is added back at the place it came from
// (a scatter-add: places picked twice receive both gradients).
#include <cmath>
#include <string>

#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

// z[i][j][k] = a[i][index[i][j][k]][k] (axis 1)      ∂L/∂a = scatter_add(g at index)
Var gather(const Var& a, int axis, const Tensor& index) {
    const ProfileScope scope("gather");
    const int ax = a.shape().normalize_axis(axis, "gather");
    return record("gather", gather(a.value(), ax, index), {a}, [shape = a.shape(), ax, index](Backward& bw) {
        bw.accumulate(0, scatter_add(shape, ax, index, bw.grad()));
    });
}

// z[…, k, …] = a[…, indices[k], …]                     ∂L/∂a[…, indices[k], …] += g[…, k, …]
Var index_select(const Var& a, int axis, const std::vector<int64_t>& indices) {
    const ProfileScope scope("index_select");
    const int ax = a.shape().normalize_axis(axis, "index_select");
    return record("index_select", index_select(a.value(), ax, indices), {a}, [ax, indices](Backward& bw) {
        index_add_(bw.grad_buffer(0), ax, indices, bw.grad());
    });
}

// weight V×D, indices (any shape) → z indices.shape×D, z[…, :] = weight[indices[…], :]
//                                                      ∂L/∂weight[v, :] += Σ_{… : indices[…] = v ≠ p} g[…, :]
//                                                      (p the padding index, if any: its row gets nothing)
Var embedding(const Var& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
    const ProfileScope scope("embedding");
    if (weight.rank() != 2)
        throw std::invalid_argument("embedding: weight must be V×D (rank 2), got " + weight.shape().str());
    const int64_t rows = weight.shape()[0], width = weight.shape()[1];
    if (padding_idx && (*padding_idx < 0 || *padding_idx >= rows))
        throw std::out_of_range("embedding: padding_idx " + std::to_string(*padding_idx) + " is out of range [0, " +
                                std::to_string(rows) + ") for weight " + weight.shape().str());
    std::vector<int64_t> picked(static_cast<size_t>(indices.numel()));
    for (int64_t p = 0; p < indices.numel(); ++p) {
        const real v = indices[p];
        if (!(v >= 0 && v < static_cast<real>(rows)) || v != std::floor(v))
            throw std::out_of_range("embedding: index " + format_index(v) + " at position " + std::to_string(p) +
                                    " is out of range [0, " + std::to_string(rows) + ") for weight " +
                                    weight.shape().str());
        picked[static_cast<size_t>(p)] = static_cast<int64_t>(v);
    }
    Shape out_shape = indices.shape();
    out_shape.push_back(width);
    Tensor z = index_select(weight.value(), 0, picked).reshape(out_shape);
    return record("embedding", std::move(z), {weight}, [picked = std::move(picked), width, padding_idx](Backward& bw) {
        Tensor g = bw.grad().reshape(Shape{static_cast<int64_t>(picked.size()), width});
        if (padding_idx) {  // the padding row receives nothing
            g = g.clone();
            for (size_t k = 0; k < picked.size(); ++k)
                if (picked[k] == *padding_idx) g.rows(static_cast<int64_t>(k), static_cast<int64_t>(k) + 1).fill_(0);
        }
        index_add_(bw.grad_buffer(0), 0, picked, g);
    });
}

// z = value where mask ≠ 0, else a                      ∂L/∂a = g where mask = 0, else 0
Var masked_fill(const Var& a, const Tensor& mask, real value) {
    const ProfileScope scope("masked_fill");
    return record("masked_fill", masked_fill(a.value(), mask, value), {a},
                  [mask](Backward& bw) { bw.accumulate(0, masked_fill(bw.grad(), mask, 0)); });
}

// z = cond ≠ 0 ? a : b                                  ∂L/∂a = g where cond, ∂L/∂b = g elsewhere
Var where(const Tensor& cond, const Var& a, const Var& b) {
    const ProfileScope scope("where");
    return record("where", where(cond, a.value(), b.value()), {a, b}, [cond](Backward& bw) {
        const Tensor zero = Tensor::scalar(0);
        if (bw.needs(0)) bw.accumulate(0, where(cond, bw.grad(), zero));
        if (bw.needs(1)) bw.accumulate(1, where(cond, zero, bw.grad()));
    });
}

}  // namespace attn
