// The fused twins of autograd/ops_conv.cpp: conv2d_fused and
// conv2d_max_pool_fused (one image at a time, its columns packed straight
// into the GEMM, never stored) and max_pool2d's 2×2 rows. The formulas, the
// ones to read, are conv2d and max_pool2d in ops_conv.cpp;
// tests/test_autograd_values.cpp checks each twin against them.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/conv_windows.hpp"
#include "autograd/ops.hpp"
#include "autograd/pool_kernels.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

using namespace conv_detail;

namespace {

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

void conv_detail::max_pool_2x2_planes(const Window& w, int64_t bc_begin, int64_t bc_end, const real* x, real* z,
                               uint16_t* argmax) {
    for (int64_t bc = bc_begin; bc < bc_end; ++bc)
        pool_2x2_rows(x + bc * w.H * w.W, w.W, w.Ho, w.Wo, z + bc * w.Ho * w.Wo, argmax + bc * w.Ho * w.Wo);
}

void conv_detail::max_pool_2x2_backward_planes(const Window& w, int64_t bc_begin, int64_t bc_end, const uint16_t* argmax,
                                        const real* g, real* dx) {
    for (int64_t bc = bc_begin; bc < bc_end; ++bc)
        pool_2x2_backward_rows(argmax + bc * w.Ho * w.Wo, g + bc * w.Ho * w.Wo, w.W, w.Ho, w.Wo,
                               dx + bc * w.H * w.W);
}

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

}  // namespace attn
