// The row kernels of max_pool2d's 2×2, stride-2 path (autograd/ops_conv_fast.cpp):
// the rows of windows of one plane, each reading two input rows. The portable versions are in
// ops_conv_fast.cpp; the AVX-512 ones, the same comparisons 16 windows at a time,
// in pool_avx512.cpp (float only, x86-64 only: call them only when
// fast_math_path() is avx512). tests/test_autograd_values.cpp checks both
// against a brute-force maximum, ties, −∞ and NaN included.
#pragma once

#include <cstdint>

#include "tensor/real.hpp"

namespace attn::detail {

// Output rows [0, rows) of one plane: row r's window ow holds x[2r][2·ow],
// x[2r][2·ow + 1], x[2r + 1][2·ow], x[2r + 1][2·ow + 1] (rows of x W apart);
// z[r·Wo + ow] = the first of them greater than all before it, starting from
// −∞ (a NaN is never greater; all −∞ or NaN: −∞), argmax its kernel offset
// 0–3.
void max_pool_2x2_rows(const real* x, int64_t W, int64_t rows, int64_t Wo, real* z, uint16_t* argmax);
// Its backward: g[r·Wo + ow] added to the element of dx at window (r, ow)'s
// offset k (row 2r + k/2, column 2·ow + k%2); no other element is touched.
void max_pool_2x2_backward_rows(const uint16_t* argmax, const real* g, int64_t W, int64_t rows, int64_t Wo, real* dx);

void max_pool_2x2_rows_avx512(const float* x, int64_t W, int64_t rows, int64_t Wo, float* z, uint16_t* argmax);
void max_pool_2x2_backward_rows_avx512(const uint16_t* argmax, const float* g, int64_t W, int64_t rows, int64_t Wo,
                                       float* dx);

}  // namespace attn::detail
