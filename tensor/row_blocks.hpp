// Sums down the rows of a matrix (a bias's gradient, a layer norm's ∂L/∂γ),
// taken in fixed blocks of rows so that two threads can share them and the
// result still has the same bits on any number of threads.
//
// Why blocks: a sum down every row in order is a chain of additions no
// thread can share except by columns, and a split by columns makes each core
// read part of every row, half of them from the other core's cache (where
// the op that wrote the rows left them). A split by rows is a different
// order of additions; tying it to the shape, not to the thread count, keeps
// the promise of docs/tensor.md ("Threads").
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/parallel.hpp"
#include "tensor/real.hpp"
#include "tensor/tensor.hpp"

namespace attn {

// How many blocks the rows of a rows×width matrix are summed in. A block
// holds at least kParallelGrain values and at least 64 rows, so a matrix too
// small to be worth splitting is one block (a plain sum down its rows, in
// order), and the blocks' own sums, at most a 64th of the matrix, are cheap
// to add up. Block b holds rows [rows·b/blocks, rows·(b+1)/blocks).
inline int64_t row_blocks(int64_t rows, int64_t width) {
    const int64_t per_block = std::max<int64_t>(64, (kParallelGrain + width - 1) / std::max<int64_t>(width, 1));
    return std::max<int64_t>(1, rows / per_block);
}

// sums[j] = Σ_r m[r, j] for a rows×width matrix m, whose row r is added by
// add_row(r, s) (s[j] += m[r, j] for j < width). add_row may do more with row
// r on the way (matmul_bias_relu's backward writes the masked row). Each
// block sums its rows in order into sums of its own, the blocks go over the
// threads, and the blocks' sums are then added in block order.
template <class AddRow>
void sum_rows_in_blocks(int64_t rows, int64_t width, real* sums, AddRow add_row) {
    const int64_t blocks = row_blocks(rows, width);
    // Block 0 sums straight into `sums`; the others into rows of `partial`.
    Tensor partial = blocks > 1 ? Tensor::zeros(Shape{blocks - 1, width}) : Tensor();
    for (int64_t j = 0; j < width; ++j) sums[j] = 0;
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            real* s = b == 0 ? sums : partial.data() + (b - 1) * width;
            for (int64_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) add_row(r, s);
        }
    });
    for (int64_t b = 1; b < blocks; ++b) {
        const real* s = partial.data() + (b - 1) * width;
        for (int64_t j = 0; j < width; ++j) sums[j] += s[j];
    }
}

}  // namespace attn
