// Two small kernels that backward functions share.
//
// pointwise(): a new tensor whose element i is f(a[i], b[i]) (or f(a[i], b[i],
// c[i])) for tensors of one shape, so an element-wise derivative is written as
// one formula, without temporaries:
//
//     pointwise(bw.grad(), y, [](real g, real y) { return g * (1 - y * y); })  // tanh
//
// Large tensors are split over the thread pool (f must be a pure function of
// its arguments); each element is computed the same way on any thread.
//
// index_add_(): the adjoint of picking slices along an axis (index_select,
// slice, split, embedding): adds src's slices into dst at the given indices.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/parallel.hpp"
#include "tensor/tensor.hpp"

namespace attn {

inline void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape())
        throw std::invalid_argument(std::string(op) + ": shapes " + a.shape().str() + " and " + b.shape().str() +
                                    " differ");
}

template <class F>
Tensor pointwise(const Tensor& a, const Tensor& b, F f) {
    check_same_shape("pointwise", a, b);
    Tensor out = Tensor::empty(a.shape());
    const real* pa = a.data();
    const real* pb = b.data();
    real* po = out.data();
    // (the pointers are copied into the closure: through references to them the
    // loop would have to load each pointer again after every store, since a
    // store through po might change them)
    parallel_for(0, a.numel(), kParallelGrain, [pa, pb, po, &f](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = f(pa[i], pb[i]);
    });
    return out;
}

template <class F>
Tensor pointwise(const Tensor& a, const Tensor& b, const Tensor& c, F f) {
    check_same_shape("pointwise", a, b);
    check_same_shape("pointwise", a, c);
    Tensor out = Tensor::empty(a.shape());
    const real* pa = a.data();
    const real* pb = b.data();
    const real* pc = c.data();
    real* po = out.data();
    parallel_for(0, a.numel(), kParallelGrain, [pa, pb, pc, po, &f](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = f(pa[i], pb[i], pc[i]);
    });
    return out;
}

// dst[…, indices[k], …] += src[…, k, …] along `axis`, where src has dst's shape
// except indices.size() along that axis. Repeated indices add up.
void index_add_(Tensor& dst, int axis, const std::vector<int64_t>& indices, const Tensor& src);

// An index value as the user wrote it, for error messages: "7", "-1", "2.5".
std::string format_index(real v);

// The indices start, start + step, … of `count` slices (slice's pattern).
std::vector<int64_t> strided_indices(int64_t start, int64_t step, int64_t count);

}  // namespace attn
