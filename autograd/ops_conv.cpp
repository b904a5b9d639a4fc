// Convolution and pooling over images, PyTorch's semantics.
//
// Shapes: input B×C×H×W; a kh×kw window moved by stride (sh, sw) over the
// input padded by (ph, pw) gives Ho×Wo positions, Ho = (H + 2·ph − kh)/sh + 1
// (rounded down), likewise Wo.
//
// conv2d is composed: unfold (im2col) lays every window out as a column, and
// one matrix product with the weight does the rest, so only unfold needs a
// hand-written backward (fold, its adjoint). The pools are primitives.
// The fused twins (conv2d_fused, conv2d_max_pool_fused and max_pool2d's 2×2
// rows, chosen by name or by set_fast) are in autograd/ops_conv_fast.cpp; the
// window geometry and walks both files share in autograd/conv_windows.hpp.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "autograd/conv_windows.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

using namespace conv_detail;

// ---- unfold (im2col) ----------------------------------------------------------------

// z[b, c·kh·kw + i·kw + j, oh·Wo + ow] = x[b, c, oh·sh − ph + i, ow·sw − pw + j]  (0 in the padding)
// ∂L/∂x[b, c, y, x] = Σ of g over every column entry that copied it (fold, col2im)
Var unfold(const Var& input, Size2 kernel, Size2 stride, Size2 padding) {
    const ProfileScope scope("unfold");
    const Window w = window_geometry(input.shape(), kernel, stride, padding, "unfold");
    Tensor cols = Tensor::empty(Shape{w.B, w.C * w.kh * w.kw, w.Ho * w.Wo});
    // (tests/test_autograd_values.cpp checks this against the formula above,
    // element by element, on strided and padded windows)
    parallel_unfold_copy(w, input.value().data(), cols.data());
    return record("unfold", std::move(cols), {input}, [w](Backward& bw) {
        const real* g = bw.grad().data();
        real* dx = bw.grad_buffer(0).data();
        const int64_t step = w.sw;
        parallel_unfold_runs(w, [=](int64_t col, int64_t in, int64_t count) {
            add_run(dx + in, step, g + col, count);
        });
    });
}

// ---- conv2d ---------------------------------------------------------------------------

// z[b, o] = Σ_c weight[o, c] ⋆ x[b, c] + bias[o]   (⋆: cross-correlation, as in PyTorch)
//         = weight(O × C·kh·kw) · unfold(x)(b) + bias: composed, the backward is
// matmul's (∂L/∂weight = Σ_b g_b·colsᵀ_b, ∂L/∂cols = weightᵀ·g) then fold.
Var conv2d(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding) {
    if (weight.rank() != 4)
        throw std::invalid_argument("conv2d: weight must be O×C×kh×kw (rank 4), got " + weight.shape().str());
    const int64_t O = weight.shape()[0], C = weight.shape()[1];
    const int kh = static_cast<int>(weight.shape()[2]), kw = static_cast<int>(weight.shape()[3]);
    const Window w = window_geometry(input.shape(), Size2(kh, kw), stride, padding, "conv2d");
    if (w.C != C)
        throw std::invalid_argument("conv2d: input " + input.shape().str() + " has " + std::to_string(w.C) +
                                    " channels but weight " + weight.shape().str() + " expects " +
                                    std::to_string(C));
    if (bias.defined() && bias.shape() != Shape{O})
        throw std::invalid_argument("conv2d: bias " + bias.shape().str() + " does not match the " +
                                    std::to_string(O) + " output channels of weight " + weight.shape().str());
    const Var cols = unfold(input, Size2(kh, kw), stride, padding);            // B × C·kh·kw × Ho·Wo
    Var z = matmul(reshape(weight, {O, C * kh * kw}), cols);                   // B × O × Ho·Wo
    if (bias.defined()) z = add(z, reshape(bias, {O, 1}));                     // bias broadcast over positions
    return reshape(z, {w.B, O, w.Ho, w.Wo});
}

// ---- pooling ----------------------------------------------------------------------------

// z[b, c, oh, ow] = max of x over the window (padding counts as −∞)
// ∂L/∂x += g at the window's first maximum (saved as its kernel offset
// i·kw + j, 2 bytes a window rather than an 8-byte input index)
Var max_pool2d(const Var& input, Size2 kernel, Size2 stride, Size2 padding, bool fast) {
    const ProfileScope scope("max_pool2d");
    if (stride.h == 0 && stride.w == 0) stride = kernel;
    const Window w = window_geometry(input.shape(), kernel, stride, padding, "max_pool2d");
    check_pool_padding(w, "max_pool2d");
    if (w.kh * w.kw > 65536)
        throw std::invalid_argument("max_pool2d: kernel " + pair_str(w.kh, w.kw) + " has over 65,536 elements");
    Tensor z = Tensor::empty(Shape{w.B, w.C, w.Ho, w.Wo});  // every window is written
    std::vector<uint16_t> argmax(static_cast<size_t>(z.numel()), 0);
    const real* x = input.value().data();
    real* pz = z.data();
    uint16_t* pa = argmax.data();
    // --fast's 2×2 rows, where they apply, get a row of their own in a profile
    // (ATTN_PROFILE=1), so that a run shows which loop it took.
    const bool rows = fast && is_2x2_stride_2(w);
    std::optional<ProfileScope> rows_scope;
    if (rows) rows_scope.emplace("max_pool2d 2x2 rows");
    parallel_planes(w, w.Ho * w.Wo * w.kh * w.kw, [&](int64_t bc_begin, int64_t bc_end) {
        max_pool_forward(w, rows, bc_begin, bc_end, x, pz, pa);
    });
    rows_scope.reset();
    return record("max_pool2d", std::move(z), {input}, [w, rows, argmax = std::move(argmax)](Backward& bw) {
        const real* g = bw.grad().data();
        real* dx = bw.grad_buffer(0).data();
        const KernelOffsets offsets(w);
        std::optional<ProfileScope> backward_rows_scope;
        if (rows) backward_rows_scope.emplace("max_pool2d 2x2 rows");
        // Planes in parallel: a window's maximum lies in its own plane.
        parallel_planes(w, w.Ho * w.Wo, [&](int64_t bc_begin, int64_t bc_end) {
            max_pool_backward(w, rows, offsets, bc_begin, bc_end, argmax.data(), g, dx);
        });
    });
}

// z[b, c, oh, ow] = (1/(kh·kw)) Σ of x over the window (padding counts as 0)
// ∂L/∂x[in] += g[window]/(kh·kw) for every window that contains in
Var avg_pool2d(const Var& input, Size2 kernel, Size2 stride, Size2 padding) {
    const ProfileScope scope("avg_pool2d");
    if (stride.h == 0 && stride.w == 0) stride = kernel;
    const Window w = window_geometry(input.shape(), kernel, stride, padding, "avg_pool2d");
    check_pool_padding(w, "avg_pool2d");
    const real inv_area = real(1) / static_cast<real>(w.kh * w.kw);
    Tensor z = Tensor::zeros(Shape{w.B, w.C, w.Ho, w.Wo});
    const real* x = input.value().data();
    real* pz = z.data();
    for_each_window_element(w, [&](int64_t window, int64_t, int64_t in) { pz[window] += inv_area * x[in]; });
    return record("avg_pool2d", std::move(z), {input}, [w, inv_area](Backward& bw) {
        const real* g = bw.grad().data();
        real* dx = bw.grad_buffer(0).data();
        for_each_window_element(w, [&](int64_t window, int64_t, int64_t in) { dx[in] += inv_area * g[window]; });
    });
}

// ---- max_pool2d's loops ------------------------------------------------------------------

namespace {

// max_pool2d's forward on planes [bc_begin, bc_end): each window's running
// maximum and its offset stay in registers. The rows and columns of a window
// that lie inside the input are worked out once per window (the rows once
// per output row), so the inner loop reads a row of the input with no bounds
// checks; it visits the elements in the same order as
// for_each_window_element, so the first maximum still wins ties.
//
// The two selections `greater ? v : best` and `greater ? k : where` compile to
// maxss and cmov: no branch on the comparison (which would mispredict on
// about a third of random inputs), and few enough registers that the chain
// from one element's maximum to the next stays out of memory. A function of
// its own, with the window's sizes copied into locals, for the same reason:
// read from the closure of the lambda that parallel_planes runs, they would
// not all fit in registers.
void max_pool_planes(const Window& w, int64_t bc_begin, int64_t bc_end, const real* x, real* z, uint16_t* argmax) {
    const int64_t H = w.H, W = w.W, Ho = w.Ho, Wo = w.Wo, kh = w.kh, kw = w.kw;
    const int64_t sh = w.sh, sw = w.sw, ph = w.ph, pw = w.pw;
    for (int64_t bc = bc_begin; bc < bc_end; ++bc) {
        const real* plane = x + bc * H * W;
        for (int64_t oh = 0; oh < Ho; ++oh) {
            const int64_t y0 = oh * sh - ph;  // the window's first row (may be in the padding)
            const int64_t i_lo = std::max<int64_t>(0, -y0), i_hi = std::min(kh, H - y0);
            for (int64_t ow = 0; ow < Wo; ++ow) {
                const int64_t x0 = ow * sw - pw;
                const int64_t j_lo = std::max<int64_t>(0, -x0), j_hi = std::min(kw, W - x0);
                const int64_t window = (bc * Ho + oh) * Wo + ow;
                real best = -std::numeric_limits<real>::infinity();
                int64_t where = 0;  // the kernel offset of the maximum
                for (int64_t i = i_lo; i < i_hi; ++i) {
                    const real* row = plane + (y0 + i) * W + x0;
                    for (int64_t j = j_lo; j < j_hi; ++j) {
                        const real v = row[j];
                        const bool greater = v > best;  // the first maximum wins ties
                        best = greater ? v : best;
                        where = greater ? i * kw + j : where;
                    }
                }
                z[window] = best;
                argmax[window] = static_cast<uint16_t>(where);
            }
        }
    }
}

// max_pool2d's backward on planes [bc_begin, bc_end): each window's gradient
// goes to its maximum, at kernel offset argmax[window] = i·kw + j (ki, kj:
// that offset's i and j, without a division per window).
void max_pool_backward_planes(const Window& w, int64_t bc_begin, int64_t bc_end, const uint16_t* argmax,
                              const int64_t* ki, const int64_t* kj, const real* g, real* dx) {
    const int64_t H = w.H, W = w.W, Ho = w.Ho, Wo = w.Wo, sh = w.sh, sw = w.sw, ph = w.ph, pw = w.pw;
    for (int64_t bc = bc_begin; bc < bc_end; ++bc)
        for (int64_t oh = 0; oh < Ho; ++oh)
            for (int64_t ow = 0; ow < Wo; ++ow) {
                const int64_t window = (bc * Ho + oh) * Wo + ow;
                const uint16_t k = argmax[window];
                const int64_t y = oh * sh - ph + ki[k], x = ow * sw - pw + kj[k];
                // (a window of −∞ or NaN only keeps k = 0, which may lie in the padding)
                if (y >= 0 && y < H && x >= 0 && x < W) dx[(bc * H + y) * W + x] += g[window];
            }
}

}  // namespace

// max_pool2d's forward on planes [bc_begin, bc_end) of w: the general loop,
// or when fast the 2×2 rows where they apply. Planes are independent: ranges
// of them can run in parallel.
void conv_detail::max_pool_forward(const Window& w, bool fast, int64_t bc_begin, int64_t bc_end, const real* x, real* z,
                            uint16_t* argmax) {
    if (fast && is_2x2_stride_2(w)) return max_pool_2x2_planes(w, bc_begin, bc_end, x, z, argmax);
    max_pool_planes(w, bc_begin, bc_end, x, z, argmax);
}

// Its backward on the same planes: each window's gradient added at its maximum.
void conv_detail::max_pool_backward(const Window& w, bool fast, const KernelOffsets& k, int64_t bc_begin, int64_t bc_end,
                             const uint16_t* argmax, const real* g, real* dx) {
    if (fast && is_2x2_stride_2(w)) return max_pool_2x2_backward_planes(w, bc_begin, bc_end, argmax, g, dx);
    max_pool_backward_planes(w, bc_begin, bc_end, argmax, k.i.data(), k.j.data(), g, dx);
}

}  // namespace attn
