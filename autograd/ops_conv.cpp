// Convolution and pooling over images, PyTorch's semantics.
//
// Shapes: input B×C×H×W; a kh×kw window moved by stride (sh, sw) over the
// input padded by (ph, pw) gives Ho×Wo positions, Ho = (H + 2·ph − kh)/sh + 1
// (rounded down), likewise Wo.
//
// conv2d is composed: unfold (im2col) lays every window out as a column, and
// one matrix product with the weight does the rest, so only unfold needs a
// hand-written backward (fold, its adjoint). The pools are primitives.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>
#include <string>
#include <type_traits>

#include "autograd/ops.hpp"
#include "autograd/pool_kernels.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

struct Window {
    int64_t B, C, H, W;  // input
    int64_t kh, kw, sh, sw, ph, pw;
    int64_t Ho, Wo;  // output positions
};

std::string pair_str(int64_t h, int64_t w) { return std::to_string(h) + "×" + std::to_string(w); }

Window window_geometry(const Shape& x, Size2 kernel, Size2 stride, Size2 padding, const char* op) {
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

bool is_2x2_stride_2(const Window& w) {
    return w.kh == 2 && w.kw == 2 && w.sh == 2 && w.sw == 2 && w.ph == 0 && w.pw == 0;
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

void check_pool_padding(const Window& w, const char* op) {
    if (2 * w.ph > w.kh || 2 * w.pw > w.kw)
        throw std::invalid_argument(std::string(op) + ": padding " + pair_str(w.ph, w.pw) +
                                    " must be at most half the kernel " + pair_str(w.kh, w.kw));
}

// On AVX-512 (the fast-math path avx512), the 2×2 rows of pool_avx512.cpp;
// else the portable ones. (Templates, so that with real = double the
// float-only kernels are never compiled.)
template <class R>
void pool_2x2_rows(const R* x, int64_t W, int64_t rows, int64_t Wo, R* z, uint16_t* argmax) {
    if constexpr (std::is_same_v<R, float>) {
        static const bool avx512 = fast_math_path() == FastMathPath::avx512;
        if (avx512) return detail::max_pool_2x2_rows_avx512(x, W, rows, Wo, z, argmax);
    }
    detail::max_pool_2x2_rows(x, W, rows, Wo, z, argmax);
}
template <class R>
void pool_2x2_backward_rows(const uint16_t* argmax, const R* g, int64_t W, int64_t rows, int64_t Wo, R* dx) {
    if constexpr (std::is_same_v<R, float>) {
        static const bool avx512 = fast_math_path() == FastMathPath::avx512;
        if (avx512) return detail::max_pool_2x2_backward_rows_avx512(argmax, g, W, rows, Wo, dx);
    }
    detail::max_pool_2x2_backward_rows(argmax, g, W, rows, Wo, dx);
}

// max_pool2d's forward on planes [bc_begin, bc_end) of w: the general loop,
// or when fast the 2×2 rows where they apply. Planes are independent: ranges
// of them can run in parallel.
void max_pool_forward(const Window& w, bool fast, int64_t bc_begin, int64_t bc_end, const real* x, real* z,
                      uint16_t* argmax) {
    if (!fast || !is_2x2_stride_2(w)) return max_pool_planes(w, bc_begin, bc_end, x, z, argmax);
    for (int64_t bc = bc_begin; bc < bc_end; ++bc)
        pool_2x2_rows(x + bc * w.H * w.W, w.W, w.Ho, w.Wo, z + bc * w.Ho * w.Wo, argmax + bc * w.Ho * w.Wo);
}

// A kernel offset k = i·kw + j as its (i, j), looked up instead of divided.
struct KernelOffsets {
    std::vector<int64_t> i, j;
    explicit KernelOffsets(const Window& w) {
        for (int64_t a = 0; a < w.kh; ++a)
            for (int64_t b = 0; b < w.kw; ++b) i.push_back(a), j.push_back(b);
    }
};

// Its backward on the same planes: each window's gradient added at its maximum.
void max_pool_backward(const Window& w, bool fast, const KernelOffsets& k, int64_t bc_begin, int64_t bc_end,
                       const uint16_t* argmax, const real* g, real* dx) {
    if (!fast || !is_2x2_stride_2(w)) return max_pool_backward_planes(w, bc_begin, bc_end, argmax, k.i.data(), k.j.data(), g, dx);
    for (int64_t bc = bc_begin; bc < bc_end; ++bc)
        pool_2x2_backward_rows(argmax + bc * w.Ho * w.Wo, g + bc * w.Ho * w.Wo, w.W, w.Ho, w.Wo,
                               dx + bc * w.H * w.W);
}

// Σ of a row, as the library's sum over an axis adds it (slice_sum in
// tensor/ops_reduce.cpp: four double accumulators, element i into the
// (i mod 4)th, then (s0 + s1) + (s2 + s3)): the bias gradient then has the
// bits conv2d's composite gives, so that --fast changes a trainer's numbers
// by nothing more than the convolution's own rounding.
real row_sum(const real* x, int64_t n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < n; ++i) s0 += x[i];
    return static_cast<real>((s0 + s1) + (s2 + s3));
}

// ---- one image's columns, never stored: packed for the GEMM ----------------
// The fused convolutions multiply by an image's unfolded columns (CK×L: rows
// m = c·kh·kw + i·kw + j, columns the positions l = oh·Wo + ow) as an
// implicit GEMM operand (tensor/gemm/gemm.hpp): the GEMM asks for one block
// at a time in its packed layout, and these functions gather it from the
// image. unfold's copy (the whole matrix written, then read back by the
// GEMM's own packing) is gone. They read a zero-padded copy of the image
// (C planes of Hp×Wp = (H + 2·ph)×(W + 2·pw)), in which every window lies
// whole, so there is no bounds test on the way:
//     cols[m][l] = padded[c][oh·sh + i][ow·sw + j]
template <class T>
struct PaddedImage {
    Window one;  // the geometry of one image
    int64_t Hp, Wp;
    const T* data;
};

// Where rows m, m + 1, ... of the columns start (their element at position
// (oh, ow) = (0, 0)), stepping (c, i, j) along instead of dividing m for
// each: a division per packed row of 32 numbers cost more than the copy.
template <class T>
class ColumnRows {
public:
    ColumnRows(const PaddedImage<T>& s, int64_t m)
        : s_(s), c_(m / (s.one.kh * s.one.kw)), i_(m % (s.one.kh * s.one.kw) / s.one.kw), j_(m % s.one.kw) {}
    const T* operator*() const { return s_.data + (c_ * s_.Hp + i_) * s_.Wp + j_; }
    ColumnRows& operator++() {
        if (++j_ == s_.one.kw) {
            j_ = 0;
            if (++i_ == s_.one.kh) i_ = 0, ++c_;
        }
        return *this;
    }

private:
    const PaddedImage<T>& s_;
    int64_t c_, i_, j_;
};

// A stretch of positions [l0, l0 + count) cut at the ends of output rows:
// per piece, the offset of its first position in the padded image (from a
// row's start), how many positions, and where it starts in the stretch.
struct Piece {
    int64_t offset, length, at;
};
inline void cut_into_rows(const Window& w, int64_t Wp, int64_t l0, int64_t count, std::vector<Piece>& pieces) {
    pieces.clear();
    for (int64_t at = 0; at < count;) {
        const int64_t oh = (l0 + at) / w.Wo, ow = (l0 + at) % w.Wo, n = std::min(w.Wo - ow, count - at);
        pieces.push_back({oh * w.sh * Wp + ow * w.sw, n, at});
        at += n;
    }
}

// B = cols_b (K = CK rows, N = L columns): step k of a panel is a stretch of
// row k0 + k, one piece per output row it crosses.
template <class T>
void pack_columns(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, T* dest) {
    const auto& s = *static_cast<const PaddedImage<T>*>(ctx);
    const int64_t sw = s.one.sw;
    std::vector<Piece> pieces;
    for (int64_t q = 0; q < nc; q += nr) {
        const int64_t cols = std::min(nr, nc - q);
        cut_into_rows(s.one, s.Wp, j0 + q, cols, pieces);
        T* panel = dest + q * kc;
        ColumnRows<T> row(s, k0);
        for (int64_t k = 0; k < kc; ++k, ++row) {
            T* d = panel + k * nr;
            for (const Piece& p : pieces) {
                const T* src = *row + p.offset;
                if (sw == 1)
                    for (int64_t u = 0; u < p.length; ++u) d[p.at + u] = src[u];
                else
                    for (int64_t u = 0; u < p.length; ++u) d[p.at + u] = src[u * sw];
            }
            std::fill(d + cols, d + nr, T(0));
        }
    }
}

// B = cols_bᵀ (K = L rows, N = CK columns): column t of a panel is a stretch
// of row j0 + q + t of the columns. Eight columns at a time, so that each
// step writes eight neighbouring numbers of the panel rather than one number
// into each of kc different cache lines.
template <class T>
void pack_columns_transposed(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, T* dest) {
    const auto& s = *static_cast<const PaddedImage<T>*>(ctx);
    const int64_t sw = s.one.sw;
    std::vector<Piece> pieces;
    cut_into_rows(s.one, s.Wp, k0, kc, pieces);
    constexpr int G = 8;
    for (int64_t q = 0; q < nc; q += nr) {
        const int64_t cols = std::min(nr, nc - q);
        T* panel = dest + q * kc;
        ColumnRows<T> row(s, j0 + q);
        for (int64_t t = 0; t < cols; t += G) {
            const int g = static_cast<int>(std::min<int64_t>(G, cols - t));
            const T* rows[G];
            for (int r = 0; r < g; ++r, ++row) rows[r] = *row;
            for (const Piece& p : pieces) {
                T* d = panel + p.at * nr + t;
                if (g == G)
                    for (int64_t u = 0, at = p.offset; u < p.length; ++u, at += sw, d += nr) {
#pragma GCC unroll 8
                        for (int r = 0; r < G; ++r) d[r] = rows[r][at];
                    }
                else
                    for (int64_t u = 0, at = p.offset; u < p.length; ++u, at += sw, d += nr)
                        for (int r = 0; r < g; ++r) d[r] = rows[r][at];
            }
        }
        if (cols < nr)
            for (int64_t k = 0; k < kc; ++k) std::fill(panel + k * nr + cols, panel + (k + 1) * nr, T(0));
    }
}

// The fused convolutions' view of their operands, and their work on one
// image b (conv2d_fused below has the formulas):
//   forward:  z_b = W cols_b + bias 1ᵀ                 z_b O×L
//   backward: ∂W += g_b cols_bᵀ,  ∂x_b += fold(Wᵀ g_b)
// cols_b is an implicit operand of the products (pack_columns above), read
// from image b padded into a buffer of padded_size() the caller owns; the
// input gradient goes through a CK×L scratch buffer the caller owns.
struct ConvImages {
    Window w;    // the whole batch
    Window one;  // one image: the walk of fold, offset to image b here
    int64_t O, CK, L, image;  // output channels, C·kh·kw, Ho·Wo, C·H·W
    Tensor x, W2, bias;       // input, weight as O×CK, bias (undefined: none)

    int64_t padded_size() const { return w.C * (w.H + 2 * w.ph) * (w.W + 2 * w.pw); }
    // Image b, zero-padded (PaddedImage), into `padded`.
    PaddedImage<real> pad(int64_t b, real* padded) const {
        const int64_t Hp = w.H + 2 * w.ph, Wp = w.W + 2 * w.pw;
        std::fill(padded, padded + padded_size(), real(0));
        const real* in = x.data() + b * image;
        for (int64_t c = 0; c < w.C; ++c)
            for (int64_t y = 0; y < w.H; ++y)
                std::copy(in + (c * w.H + y) * w.W, in + (c * w.H + y + 1) * w.W,
                          padded + (c * Hp + y + w.ph) * Wp + w.pw);
        return {one, Hp, Wp, padded};
    }

    // with_bias false: z_b = W cols_b only, the caller adds the bias (in a
    // pass of its own over the image, where it has one anyway: the same bits,
    // since W cols_b is a float before the bias is added either way).
    void forward(int64_t b, real* zb, real* padded, bool with_bias = true) const {
        if (with_bias)
            parallel_for(0, O, parallel_grain(L), [&](int64_t o0, int64_t o1) {
                for (int64_t o = o0; o < o1; ++o)
                    std::fill(zb + o * L, zb + (o + 1) * L, bias.defined() ? bias[o] : 0);
            });
        const PaddedImage<real> cols = pad(b, padded);
        gemm_implicit_b(false, O, L, CK, real(1), W2.data(), CK, ImplicitB<real>{&pack_columns<real>, &cols},
                        real(with_bias ? 1 : 0), zb, L);
    }
    // dW or dx null: that gradient is not needed.
    void backward(int64_t b, const real* gb, real* dW, real* dx, real* scratch, real* padded) const {
        if (dW) {  // += g_b cols_bᵀ
            const PaddedImage<real> cols = pad(b, padded);
            gemm_implicit_b(false, O, CK, L, real(1), gb, L, ImplicitB<real>{&pack_columns_transposed<real>, &cols},
                            real(1), dW, CK);
        }
        if (dx) {  // dx_b += fold(Wᵀ g_b), each plane of the image adding only to itself
            gemm(true, false, CK, L, O, real(1), W2.data(), CK, gb, L, real(0), scratch, L);
            real* dxb = dx + b * image;
            const real* pc = scratch;
            const int64_t step = w.sw;
            parallel_planes(one, w.kh * w.kw * L, [&](int64_t c_begin, int64_t c_end) {
                for_each_unfold_run(one, c_begin, c_end, [=](int64_t col, int64_t in, int64_t count) {
                    add_run(dxb + in, step, pc + col, count);
                });
            });
        }
    }
};

ConvImages conv_images(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding,
                       const char* op) {
    if (weight.rank() != 4)
        throw std::invalid_argument(std::string(op) + ": weight must be O×C×kh×kw (rank 4), got " +
                                    weight.shape().str());
    const int64_t O = weight.shape()[0], C = weight.shape()[1];
    const int kh = static_cast<int>(weight.shape()[2]), kw = static_cast<int>(weight.shape()[3]);
    const Window w = window_geometry(input.shape(), Size2(kh, kw), stride, padding, op);
    if (w.C != C || (bias.defined() && bias.shape() != Shape{O}))
        throw std::invalid_argument(std::string(op) + ": input " + input.shape().str() + ", weight " +
                                    weight.shape().str() + " and bias " +
                                    (bias.defined() ? bias.shape().str() : std::string("(none)")) +
                                    " must be B×C×H×W, O×C×kh×kw and O");
    Window one = w;
    one.B = 1;
    const int64_t CK = C * kh * kw;
    return {w, one, O, CK, w.Ho * w.Wo, w.C * w.H * w.W, input.value(), weight.value().reshape(Shape{O, CK}),
            bias.defined() ? bias.value() : Tensor()};
}

}  // namespace

// ---- max_pool2d's 2×2 rows (autograd/pool_kernels.hpp) ---------------------------------

// The pool of most CNN encoders (W4's): 2×2 windows, stride 2, no padding,
// one row of Wo windows at a time, reading two input rows. Every window lies
// inside the input, and its four elements are compared in the order of
// max_pool_planes' loop with the same selections, so the maximum and its
// offset are the same, ties and −∞ included (tests/test_autograd_values.cpp
// checks both against a brute-force maximum). With no loop inside a window,
// the compiler vectorises the row: the selections become masks (GCC needs
// -fno-trapping-math for that, see the Makefile). On AVX-512, the rows of
// pool_avx512.cpp, 16 windows at a time, run instead (pool_2x2_rows).
void detail::max_pool_2x2_rows(const real* x, int64_t W, int64_t rows, int64_t Wo, real* z, uint16_t* argmax) {
    for (int64_t r = 0; r < rows; ++r) {
        const real* top = x + 2 * r * W;
        const real* bottom = top + W;
        for (int64_t ow = 0; ow < Wo; ++ow) {
            const real a = top[2 * ow], b = top[2 * ow + 1], c = bottom[2 * ow], d = bottom[2 * ow + 1];
            real best = -std::numeric_limits<real>::infinity();
            int32_t where = 0;  // the kernel offset i·2 + j of the maximum
            bool greater = a > best;
            best = greater ? a : best;
            greater = b > best;
            best = greater ? b : best;
            where = greater ? 1 : where;
            greater = c > best;
            best = greater ? c : best;
            where = greater ? 2 : where;
            greater = d > best;
            best = greater ? d : best;
            where = greater ? 3 : where;
            z[r * Wo + ow] = best;
            argmax[r * Wo + ow] = static_cast<uint16_t>(where);
        }
    }
}

// Its backward: window (r, ow)'s gradient goes to row 2r + k/2, column 2·ow + k%2.
void detail::max_pool_2x2_backward_rows(const uint16_t* argmax, const real* g, int64_t W, int64_t rows, int64_t Wo,
                                        real* dx) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t ow = 0; ow < Wo; ++ow) {
            const int64_t k = argmax[r * Wo + ow];
            dx[(2 * r + (k >> 1)) * W + 2 * ow + (k & 1)] += g[r * Wo + ow];
        }
}

#if !defined(__x86_64__)
void detail::max_pool_2x2_rows_avx512(const float*, int64_t, int64_t, int64_t, float*, uint16_t*) {}
void detail::max_pool_2x2_backward_rows_avx512(const uint16_t*, const float*, int64_t, int64_t, int64_t, float*) {}
#endif

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

// The same as one op, with a hand-written backward: what conv2d composes from
// unfold, matmul and add, one image at a time. An image's columns (C·kh·kw ×
// Ho·Wo, ~1 MB for W4's second layer; 29 MB for all 32 images) are never
// stored: both products that read them pack them block by block straight
// from the zero-padded image (pack_columns, an implicit GEMM operand). Keeps
// only the input for backward:
//   z_b = W cols_b + b 1ᵀ            W O×CK, cols_b CK×L, z_b O×L
//   ∂L/∂W += Σ_b g_b cols_bᵀ          ∂L/∂b += Σ_{b,l} g_b[:, l]
//   ∂L/∂x_b += fold(Wᵀ g_b)
// Each product is split over the threads by gemm (its packing with it, and
// counted as a product by the profiler); the fold of one image splits its
// channel planes. tests/test_autograd_values.cpp checks it against conv2d,
// value and gradient, and on 1 and 2 threads.
Var conv2d_fused(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding) {
    const ProfileScope scope("conv2d_fused");
    const ConvImages conv = conv_images(input, weight, bias, stride, padding, "conv2d_fused");
    const int64_t B = conv.w.B, O = conv.O, L = conv.L;
    Tensor z = Tensor::empty(Shape{B, O, L});
    {
        Tensor padded = Tensor::empty(Shape{conv.padded_size()});
        for (int64_t b = 0; b < B; ++b) conv.forward(b, z.data() + b * O * L, padded.data());
    }
    std::vector<Var> inputs{input, weight};
    if (bias.defined()) inputs.push_back(bias);
    return record("conv2d_fused", z.reshape(Shape{B, O, conv.w.Ho, conv.w.Wo}), inputs, [conv, B, O, L](Backward& bw) {
        const Tensor g = bw.grad().reshape(Shape{B, O, L});
        if (conv.bias.defined() && bw.needs(2)) {  // Σ over images and positions: per image a row sum (B×O), then over b
            const Tensor per_image = sum(g, 2);
            real* db = bw.grad_buffer(2).data();
            for (int64_t b = 0; b < B; ++b)
                for (int64_t o = 0; o < O; ++o) db[o] += per_image.data()[b * O + o];
        }
        real* dW = bw.needs(1) ? bw.grad_buffer(1).data() : nullptr;
        real* dx = bw.needs(0) ? bw.grad_buffer(0).data() : nullptr;
        Tensor scratch = Tensor::empty(Shape{conv.CK, L});  // image b's columns' gradient
        Tensor padded = Tensor::empty(Shape{conv.padded_size()});
        for (int64_t b = 0; b < B; ++b) conv.backward(b, g.data() + b * O * L, dW, dx, scratch.data(), padded.data());
    });
}

// max_pool2d(conv2d_fused(...)) as one op: each image's convolution (O×Ho×Wo,
// 400 KB for W4's first layer) is pooled while it is still in cache, and
// only the pooled output (a quarter of it for 2×2 windows) and the argmax
// offsets are kept. The convolution's full output, 13 MB for W4's first layer,
// is never written, nor its gradient: backward puts image b's pooled gradient
// back at its maxima into an O×L buffer (max_pool2d's backward), which then
// goes through conv2d_fused's backward for that image:
//   z_b = W cols_b + bias 1ᵀ,   y_b = max_pool(z_b)
//   ∂z_b = g_b at each window's first maximum (0 elsewhere)
//   ∂W += ∂z_b cols_bᵀ,  ∂bias += Σ_l ∂z_b[:, l],  ∂x_b += fold(Wᵀ ∂z_b)
// conv2d_max_pool_relu_fused adds the ReLU of the pooled values in the same
// pass, and masks g by the output before putting it back:
//   y_b = relu(max_pool(z_b)),   ∂z_b = g_b·[y_b > 0] at each window's first maximum
// tests/test_autograd_values.cpp checks both against max_pool2d(conv2d(...))
// and its relu.
namespace {
Var conv_max_pool(const char* op, bool then_relu, const Var& input, const Var& weight, const Var& bias, Size2 stride,
                  Size2 padding, Size2 pool_kernel, Size2 pool_stride, Size2 pool_padding) {
    const ProfileScope scope(op);
    const ConvImages conv = conv_images(input, weight, bias, stride, padding, op);
    const int64_t B = conv.w.B, O = conv.O, L = conv.L;
    if (pool_stride.h == 0 && pool_stride.w == 0) pool_stride = pool_kernel;
    // The pool's walk over one image's O planes of the convolution's Ho×Wo.
    const Window pool = window_geometry(Shape{1, O, conv.w.Ho, conv.w.Wo}, pool_kernel, pool_stride, pool_padding, op);
    check_pool_padding(pool, op);
    if (pool.kh * pool.kw > 65536)
        throw std::invalid_argument(std::string(op) + ": pool kernel " + pair_str(pool.kh, pool.kw) +
                                    " has over 65,536 elements");
    const int64_t P = O * pool.Ho * pool.Wo;  // one image's pooled values
    Tensor y = Tensor::empty(Shape{B, O, pool.Ho, pool.Wo});
    std::vector<uint16_t> argmax(static_cast<size_t>(y.numel()));
    {
        Tensor z = Tensor::empty(Shape{O, L}), padded = Tensor::empty(Shape{conv.padded_size()});
        for (int64_t b = 0; b < B; ++b) {
            conv.forward(b, z.data(), padded.data(), /*with_bias=*/false);
            real* yb = y.data() + b * P;
            uint16_t* ab = argmax.data() + b * P;
            const int64_t plane = pool.Ho * pool.Wo;
            // Channel by channel over the threads, all in one pass: the bias,
            // the pool, the ReLU. (Each pass a parallel region of its own, per
            // image, cost more in hand-offs than the second thread gained.)
            parallel_planes(pool, L + plane * pool.kh * pool.kw, [&](int64_t c_begin, int64_t c_end) {
                if (conv.bias.defined())
                    for (int64_t c = c_begin; c < c_end; ++c)
                        for (real *zc = z.data() + c * L, *end = zc + L; zc != end; ++zc) *zc += conv.bias[c];
                max_pool_forward(pool, /*fast=*/true, c_begin, c_end, z.data(), yb, ab);
                if (then_relu)
                    for (int64_t i = c_begin * plane; i < c_end * plane; ++i) yb[i] = keep_or_zero(yb[i] > 0, yb[i]);
            });
        }
    }
    std::vector<Var> inputs{input, weight};
    if (bias.defined()) inputs.push_back(bias);
    return record(op, std::move(y), inputs, [conv, pool, B, O, L, P, then_relu,
                                        argmax = std::move(argmax)](Backward& bw) {
        const real* g = bw.grad().data();
        const real* out = bw.output().data();
        real* db = conv.bias.defined() && bw.needs(2) ? bw.grad_buffer(2).data() : nullptr;
        real* dW = bw.needs(1) ? bw.grad_buffer(1).data() : nullptr;
        real* dx = bw.needs(0) ? bw.grad_buffer(0).data() : nullptr;
        const KernelOffsets offsets(pool);
        Tensor dz = Tensor::empty(Shape{O, L});               // image b's ∂z_b
        Tensor scratch = Tensor::empty(Shape{conv.CK, L});  // its columns' gradient
        Tensor padded = Tensor::empty(Shape{conv.padded_size()});
        std::vector<real> masked(then_relu ? static_cast<size_t>(P) : 0);  // image b's g where the ReLU passed it
        for (int64_t b = 0; b < B; ++b) {
            const real* gb = then_relu ? masked.data() : g + b * P;
            const uint16_t* ab = argmax.data() + b * P;
            const int64_t plane = pool.Ho * pool.Wo;
            // Channel by channel, in one pass: ∂z cleared, the ReLU's mask,
            // the scatter, the bias's sums (each channel's on one thread, in
            // one order: the same bits on any number of threads).
            parallel_planes(pool, 2 * L + plane, [&](int64_t c_begin, int64_t c_end) {
                std::fill(dz.data() + c_begin * L, dz.data() + c_end * L, real(0));
                if (then_relu)  // ReLU's gradient: g where the output is > 0 (a pooled maximum is never NaN)
                    for (int64_t i = c_begin * plane; i < c_end * plane; ++i)
                        masked[i] = keep_or_zero(out[b * P + i] > 0, g[b * P + i]);
                max_pool_backward(pool, /*fast=*/true, offsets, c_begin, c_end, ab, gb, dz.data());
                if (db)
                    for (int64_t c = c_begin; c < c_end; ++c) db[c] += row_sum(dz.data() + c * L, L);
            });
            conv.backward(b, dz.data(), dW, dx, scratch.data(), padded.data());
        }
    });
}
}  // namespace

Var conv2d_max_pool_fused(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding,
                          Size2 pool_kernel, Size2 pool_stride, Size2 pool_padding) {
    return conv_max_pool("conv2d_max_pool_fused", false, input, weight, bias, stride, padding, pool_kernel, pool_stride,
                         pool_padding);
}

// The same followed by a ReLU, in the same pass over each image's pooled
// values; its gradient masked by the output.
Var conv2d_max_pool_relu_fused(const Var& input, const Var& weight, const Var& bias, Size2 stride, Size2 padding,
                               Size2 pool_kernel, Size2 pool_stride, Size2 pool_padding) {
    return conv_max_pool("conv2d_max_pool_relu_fused", true, input, weight, bias, stride, padding, pool_kernel,
                         pool_stride, pool_padding);
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
    parallel_planes(w, w.Ho * w.Wo * w.kh * w.kw, [&](int64_t bc_begin, int64_t bc_end) {
        max_pool_forward(w, fast, bc_begin, bc_end, x, pz, pa);
    });
    return record("max_pool2d", std::move(z), {input}, [w, fast, argmax = std::move(argmax)](Backward& bw) {
        const real* g = bw.grad().data();
        real* dx = bw.grad_buffer(0).data();
        const KernelOffsets offsets(w);
        // Planes in parallel: a window's maximum lies in its own plane.
        parallel_planes(w, w.Ho * w.Wo, [&](int64_t bc_begin, int64_t bc_end) {
            max_pool_backward(w, fast, offsets, bc_begin, bc_end, argmax.data(), g, dx);
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

}  // namespace attn
