// The geometry and the walks that convolution and pooling share
// (autograd/ops_conv.cpp, the ops as the formulas; autograd/ops_conv_fast.cpp,
// their fused twins): a window's sizes, the walk over every window element,
// unfold's runs, and the planes split over the threads. Internal to the two
// files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "tensor/parallel.hpp"

namespace attn::conv_detail {

struct Window {
    int64_t B, C, H, W;  // input
    int64_t kh, kw, sh, sw, ph, pw;
    int64_t Ho, Wo;  // output positions
};

inline std::string pair_str(int64_t h, int64_t w) { return std::to_string(h) + "×" + std::to_string(w); }

inline Window window_geometry(const Shape& x, Size2 kernel, Size2 stride, Size2 padding, const char* op) {
    if (x.rank() != 4)
        throw std::invalid_argument(std::string(op) + ": input must be B×C×H×W (rank 4), got " + x.str());
    if (kernel.h <= 0 || kernel.w <= 0 || stride.h <= 0 || stride.w <= 0 || padding.h < 0 || padding.w < 0)
        throw std::invalid_argument(std::string(op) + ": kernel " + pair_str(kernel.h, kernel.w) + " and stride " +
                                    pair_str(stride.h, stride.w) + " must be positive, padding " +
                                    pair_str(padding.h, padding.w) + " not negative");
    Window w{x[0], x[1], x[2], x[3], kernel.h, kernel.w, stride.h, stride.w, padding.h, padding.w, 0, 0};
    if (w.H + 2 * w.ph < w.kh || w.W + 2 * w.pw < w.kw)
        throw std::invalid_argument(std::string(op) + ": kernel " + pair_str(w.kh, w.kw) + " with padding " +
                                    pair_str(w.ph, w.pw) + " does not fit input " + x.str());
    w.Ho = (w.H + 2 * w.ph - w.kh) / w.sh + 1;
    w.Wo = (w.W + 2 * w.pw - w.kw) / w.sw + 1;
    return w;
}

// Every (window position, kernel offset) pair that falls inside the image, in
// order: visit(window, kernel_offset, input_index) with window = ((b·C + c)·Ho
// + oh)·Wo + ow and kernel_offset = i·kw + j. Positions in the padding are
// skipped. Both pools are this one walk.
template <class F>
void for_each_window_element(const Window& w, F visit) {
    for (int64_t bc = 0; bc < w.B * w.C; ++bc)
        for (int64_t oh = 0; oh < w.Ho; ++oh)
            for (int64_t ow = 0; ow < w.Wo; ++ow) {
                const int64_t window = (bc * w.Ho + oh) * w.Wo + ow;
                for (int64_t i = 0; i < w.kh; ++i) {
                    const int64_t y = oh * w.sh - w.ph + i;
                    if (y < 0 || y >= w.H) continue;
                    for (int64_t j = 0; j < w.kw; ++j) {
                        const int64_t x = ow * w.sw - w.pw + j;
                        if (x < 0 || x >= w.W) continue;
                        visit(window, i * w.kw + j, (bc * w.H + y) * w.W + x);
                    }
                }
            }
}

// unfold's walk: where the element of window (b, c, oh, ow) at kernel offset
// k = i·kw + j goes in the B×(C·kh·kw)×(Ho·Wo) output: row c·kh·kw + k,
// column oh·Wo + ow. Walked one run of a row at a time: for each column row
// (b, c, i, j) and output row oh, the input row y = oh·sh − ph + i is read at
// x = ow·sw − pw + j for the ow whose x falls inside the image, a run of
// `count` values, every sw-th of the input row, into consecutive columns.
// run(column_offset, input_offset, count). Walking element by element, as the
// pools do, would cost a division to place each one, for every element of the
// unfolded copy, which is kh·kw times the input.
// Planes bc (= b·C + c) in [bc_begin, bc_end) only: different planes touch
// different elements of both sides, so ranges of planes can run in parallel.
template <class F>
void for_each_unfold_run(const Window& w, int64_t bc_begin, int64_t bc_end, F run) {
    const int64_t H = w.H, W = w.W, Ho = w.Ho, Wo = w.Wo, kh = w.kh, kw = w.kw;
    const int64_t sh = w.sh, sw = w.sw, ph = w.ph, pw = w.pw;
    const int64_t K = kh * kw, L = Ho * Wo;
    for (int64_t bc = bc_begin; bc < bc_end; ++bc)
        for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
                // the ow with 0 ≤ ow·sw − pw + j < W
                const int64_t lo = std::max<int64_t>(0, (pw - j + sw - 1) / sw);
                const int64_t last = W - 1 + pw - j;  // ow·sw ≤ last
                const int64_t hi = last < 0 ? 0 : std::min<int64_t>(Wo, last / sw + 1);
                const int64_t row = (bc * K + i * kw + j) * L;  // (b·C + c)·K + k = b·(C·K) + (c·K + k)
                for (int64_t oh = 0; oh < Ho; ++oh) {
                    const int64_t y = oh * sh - ph + i;
                    if (y < 0 || y >= H || hi <= lo) continue;
                    run(row + oh * Wo + lo, (bc * H + y) * W + lo * sw - pw + j, hi - lo);
                }
            }
}

// The two ends of one run: unfold copies `count` values, every stride-th of
// an input row, to consecutive columns; fold adds them back. With stride 1
// (every convolution of the workloads) both are plain vector loops.
inline void copy_run(real* cols, const real* in, int64_t stride, int64_t count) {
    if (stride == 1)  // a loop, not std::copy: the runs are short (28 values in W4), a memmove call costs more
        for (int64_t t = 0; t < count; ++t) cols[t] = in[t];
    else
        for (int64_t t = 0; t < count; ++t) cols[t] = in[t * stride];
}
inline void add_run(real* in, int64_t stride, const real* cols, int64_t count) {
    if (stride == 1)
        for (int64_t t = 0; t < count; ++t) in[t] += cols[t];
    else
        for (int64_t t = 0; t < count; ++t) in[t * stride] += cols[t];
}

// Runs fn(bc_begin, bc_end) over the B·C planes of w, split over the thread
// pool when there is enough work: `per_plane` is the work of one plane (in
// elements touched; parallel_grain). Every plane is computed the same way on
// any thread, so the result does not depend on the number of threads.
template <class F>
void parallel_planes(const Window& w, int64_t per_plane, F fn) {
    parallel_for(0, w.B * w.C, parallel_grain(per_plane), fn);
}

// unfold's walk over all the planes of w, in parallel: the columns written
// (or, for fold, the input elements added to) differ from plane to plane.
template <class F>
void parallel_unfold_runs(const Window& w, F run) {
    parallel_planes(w, w.kh * w.kw * w.Ho * w.Wo,
                    [&](int64_t bc_begin, int64_t bc_end) { for_each_unfold_run(w, bc_begin, bc_end, run); });
}

// unfold's copy into cols (B·C planes of kh·kw·Ho·Wo entries each), in
// parallel: each plane's block is zeroed (the padding's entries stay 0), then
// its runs overwrite the rest while the block is still in cache. Zeroing all
// of cols beforehand wrote it to memory twice: conv2's columns in W4 are 29 MB.
inline void parallel_unfold_copy(const Window& w, const real* x, real* cols) {
    const int64_t per_plane = w.kh * w.kw * w.Ho * w.Wo, sw = w.sw;
    parallel_planes(w, per_plane, [&](int64_t bc_begin, int64_t bc_end) {
        for (int64_t bc = bc_begin; bc < bc_end; ++bc) {
            std::fill(cols + bc * per_plane, cols + (bc + 1) * per_plane, real(0));
            for_each_unfold_run(w, bc, bc + 1,
                                [=](int64_t col, int64_t in, int64_t count) { copy_run(cols + col, x + in, sw, count); });
        }
    });
}

inline bool is_2x2_stride_2(const Window& w) {
    return w.kh == 2 && w.kw == 2 && w.sh == 2 && w.sw == 2 && w.ph == 0 && w.pw == 0;
}

inline void check_pool_padding(const Window& w, const char* op) {
    if (2 * w.ph > w.kh || 2 * w.pw > w.kw)
        throw std::invalid_argument(std::string(op) + ": padding " + pair_str(w.ph, w.pw) +
                                    " must be at most half the kernel " + pair_str(w.kh, w.kw));
}

// A kernel offset k = i·kw + j as its (i, j), looked up instead of divided.
struct KernelOffsets {
    std::vector<int64_t> i, j;
    explicit KernelOffsets(const Window& w) {
        for (int64_t a = 0; a < w.kh; ++a)
            for (int64_t b = 0; b < w.kw; ++b) i.push_back(a), j.push_back(b);
    }
};

// max_pool2d over planes [bc_begin, bc_end) of w, forward and backward
// (autograd/ops_conv.cpp): the loop over each window, or when fast the 2×2
// rows where they apply (max_pool_2x2_planes, autograd/ops_conv_fast.cpp).
void max_pool_forward(const Window& w, bool fast, int64_t bc_begin, int64_t bc_end, const real* x, real* z,
                      uint16_t* argmax);
void max_pool_backward(const Window& w, bool fast, const KernelOffsets& k, int64_t bc_begin, int64_t bc_end,
                       const uint16_t* argmax, const real* g, real* dx);
// The 2×2, stride-2 windows a row at a time (autograd/ops_conv_fast.cpp).
void max_pool_2x2_planes(const Window& w, int64_t bc_begin, int64_t bc_end, const real* x, real* z, uint16_t* argmax);
void max_pool_2x2_backward_planes(const Window& w, int64_t bc_begin, int64_t bc_end, const uint16_t* argmax,
                                  const real* g, real* dx);

}  // namespace attn::conv_detail
