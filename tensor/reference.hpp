// The element-wise and reduction ops as plain loops: one thread, one index at
// a time, no special case, like gemm_reference for the matrix product. They
// define what tensor/ops.hpp computes; the library's own versions (several
// cases each, split over the threads, written so that the compiler
// vectorises them) are tested against these in tests/test_tensor_reference.cpp.
//
//   binary(a, b, f)    out[i] = f(a[i'], b[i'']) with NumPy's broadcasting:
//                      the output's multi-index i, read off each input with its
//                      size-1 (or missing leading) axes held at 0
//   unary(a, f)        out[i] = f(a[i])
//   sum, max           along one axis (keepdim or not), Σ in double
//   softmax            along one axis: e^(x − m) / Σ e^(x − m), m the maximum
//                      (a slice of −∞ only: zeros)
#pragma once

#include "tensor/tensor.hpp"

namespace attn::reference {

Tensor binary(const Tensor& a, const Tensor& b, real (*f)(real, real));
Tensor unary(const Tensor& a, real (*f)(real));
Tensor sum(const Tensor& a, int axis, bool keepdim = false);
Tensor max(const Tensor& a, int axis, bool keepdim = false);
Tensor softmax(const Tensor& a, int axis);

}  // namespace attn::reference
