// Element-wise ops: one value of the output from the values at the same
// position of the inputs.
//
//   unary      neg exp log sqrt abs sign tanh sigmoid relu leaky_relu gelu
//              softplus clamp pow square
//   binary     add sub mul div pow minimum maximum, comparisons eq gt ge lt le,
//              where (three inputs), masked_fill
//   in place   add_ axpy_ mul_
//
// Binary ops broadcast as NumPy does (tensor/shape.hpp): the shapes are aligned
// at their last axis, and an axis of size 1 (or a missing leading axis) is
// repeated to match the other input. No broadcast copy is ever made: each input
// is read through strides in which a broadcast axis has stride 0.
//
// How the loops stay fast. These ops run millions of times in training, mostly
// on small tensors, so:
//   1. identical shapes (the common case) are one flat loop;
//   2. a one-element input is a scalar, read once;
//   3. an input that is a trailing block of the other (a bias of size d added
//      to B×n×d) is one loop over the block inside one loop over the repeats;
//   4. otherwise the broadcast is "planned": adjacent axes that can be walked
//      as one are merged (B×n×d times a B×n×1 mask becomes (B·n)×d, the mask
//      read with inner stride 0), so the innermost loop
//      runs over the longest possible contiguous run, with each input's inner
//      stride either 1 or 0 — three tight loops cover every case;
//   5. only tensors above ~32k elements are split across the thread pool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"

namespace attn {
namespace {

// "1", "-0.5": a value as it appears in an error message.
std::string show(real v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

void check_defined(const Tensor& t, const char* op) {
    if (!t.defined()) throw std::invalid_argument(std::string(op) + ": the input tensor is undefined");
}

// ---- unary -------------------------------------------------------------------

// out[i] = f(a[i]).
template <class F>
Tensor map(const Tensor& a, const char* op, F f) {
    check_defined(a, op);
    Tensor out = Tensor::empty(a.shape());
    const real* pa = a.data();
    real* po = out.data();
    parallel_for(0, a.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) po[i] = f(pa[i]);
    });
    return out;
}

// out = f over the whole input, where f is a span kernel of fast_math.hpp
// (exp_into, tanh_into, ...), handed one contiguous chunk per thread.
Tensor map_span(const Tensor& a, const char* op, void (*f)(const real*, real*, int64_t)) {
    check_defined(a, op);
    Tensor out = Tensor::empty(a.shape());
    const real* pa = a.data();
    real* po = out.data();
    parallel_for(0, a.numel(), kParallelGrain, [&](int64_t b, int64_t e) { f(pa + b, po + b, e - b); });
    return out;
}

// ---- the broadcast plan ------------------------------------------------------

// How to walk N inputs broadcast to an output shape: `rank` merged axes of
// sizes dims[], and for input k the stride (in elements, 0 when broadcast) of
// each merged axis. The output is contiguous. The last axis is the inner loop.
template <int N>
struct BroadcastPlan {
    int rank = 0;
    int64_t dims[Shape::kMaxRank] = {};
    int64_t strides[N][Shape::kMaxRank] = {};
};

template <int N>
BroadcastPlan<N> plan_broadcast(const Shape& out, const Shape* const (&in)[N]) {
    // 1. Strides of each input, in the output's axes: 0 where it is broadcast.
    int64_t full[N][Shape::kMaxRank];
    for (int k = 0; k < N; ++k) {
        const Shape& s = *in[k];
        const int shift = out.rank() - s.rank();
        int64_t stride = 1;
        for (int i = out.rank() - 1; i >= 0; --i) {
            const int j = i - shift;
            const int64_t d = j >= 0 ? s[j] : 1;
            full[k][i] = d == 1 ? 0 : stride;
            stride *= d;
        }
    }
    // 2. Drop size-1 output axes and merge axis i into the previous one when
    //    every input steps through both as through one longer axis:
    //    stride[prev] == stride[i] · dims[i].
    BroadcastPlan<N> p;
    for (int i = 0; i < out.rank(); ++i) {
        if (out[i] == 1) continue;
        bool merge = p.rank > 0;
        for (int k = 0; k < N && merge; ++k) merge = p.strides[k][p.rank - 1] == full[k][i] * out[i];
        if (merge) {
            p.dims[p.rank - 1] *= out[i];
            for (int k = 0; k < N; ++k) p.strides[k][p.rank - 1] = full[k][i];
        } else {
            p.dims[p.rank] = out[i];
            for (int k = 0; k < N; ++k) p.strides[k][p.rank] = full[k][i];
            ++p.rank;
        }
    }
    if (p.rank == 0) {  // every axis has size 1: one element
        p.rank = 1;
        p.dims[0] = 1;
    }
    return p;
}

// Calls row(out_offset, in_offsets[N], length) for every inner row of the plan.
// Rows are split across threads when the output is large; each chunk finds the
// offsets of its first row by division, then counts up like an odometer.
template <int N, class Row>
void for_each_row(const BroadcastPlan<N>& p, Row row) {
    const int64_t inner = p.dims[p.rank - 1];
    int64_t rows = 1;
    for (int i = 0; i + 1 < p.rank; ++i) rows *= p.dims[i];
    const int64_t grain = parallel_grain(inner);
    parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
        int64_t idx[Shape::kMaxRank] = {};
        int64_t off[N] = {};
        int64_t rest = begin;
        for (int i = p.rank - 2; i >= 0; --i) {
            idx[i] = rest % p.dims[i];
            rest /= p.dims[i];
            for (int k = 0; k < N; ++k) off[k] += idx[i] * p.strides[k][i];
        }
        for (int64_t r = begin; r < end; ++r) {
            row(r * inner, off, inner);
            for (int i = p.rank - 2; i >= 0; --i) {  // odometer step
                for (int k = 0; k < N; ++k) off[k] += p.strides[k][i];
                if (++idx[i] < p.dims[i]) break;
                for (int k = 0; k < N; ++k) off[k] -= p.strides[k][i] * p.dims[i];
                idx[i] = 0;
            }
        }
    });
}

// True when `small`, without its leading 1s, is the trailing part of `big`:
// broadcasting it then repeats one contiguous block, big.numel() / small.numel()
// times (the bias in B×n×d + d).
bool is_trailing_block(const Shape& small, const Shape& big) {
    int lead = 0;
    while (lead < small.rank() && small[lead] == 1) ++lead;
    const int r = small.rank() - lead;
    if (r > big.rank()) return false;
    for (int i = 1; i <= r; ++i)
        if (small[small.rank() - i] != big[big.rank() - i]) return false;
    return true;
}

// Calls block_fn(offset) for offset = 0, block, 2·block, … < n, in parallel
// chunks of whole blocks when n is large.
template <class BlockFn>
void for_each_block(int64_t n, int64_t block, BlockFn block_fn) {
    const int64_t grain = parallel_grain(block);
    parallel_for(0, n / block, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) block_fn(r * block);
    });
}

// out = f(a, b) with broadcasting, written into `out`, whose shape must be the
// broadcast shape (it may be `a` itself: the in-place ops use that).
template <class F>
void zip_into(Tensor& out, const Tensor& a, const Tensor& b, F f) {
    const real* pa = a.data();
    const real* pb = b.data();
    real* po = out.data();
    const int64_t n = out.numel();
    if (a.shape() == out.shape() && b.shape() == out.shape()) {  // 1. same shapes
        parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], pb[i]);
        });
        return;
    }
    if (a.shape() == out.shape() && b.numel() == 1) {  // 2. tensor ∘ scalar
        const real s = pb[0];
        parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], s);
        });
        return;
    }
    if (b.shape() == out.shape() && a.numel() == 1) {  //    scalar ∘ tensor
        const real s = pa[0];
        parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) po[i] = f(s, pb[i]);
        });
        return;
    }
    if (n == 0) return;
    if (a.shape() == out.shape() && is_trailing_block(b.shape(), out.shape())) {  // 3. x + bias
        const int64_t block = b.numel();
        for_each_block(n, block, [&](int64_t o) {
            for (int64_t i = 0; i < block; ++i) po[o + i] = f(pa[o + i], pb[i]);
        });
        return;
    }
    if (b.shape() == out.shape() && is_trailing_block(a.shape(), out.shape())) {  //    bias + x
        const int64_t block = a.numel();
        for_each_block(n, block, [&](int64_t o) {
            for (int64_t i = 0; i < block; ++i) po[o + i] = f(pa[i], pb[o + i]);
        });
        return;
    }
    const Shape* shapes[2] = {&a.shape(), &b.shape()};  // 4. planned broadcast
    const BroadcastPlan<2> p = plan_broadcast<2>(out.shape(), shapes);
    const int last = p.rank - 1;
    const bool a_moves = p.strides[0][last] != 0, b_moves = p.strides[1][last] != 0;
    for_each_row<2>(p, [&](int64_t o, const int64_t* off, int64_t len) {
        real* dst = po + o;
        const real* x = pa + off[0];
        const real* y = pb + off[1];
        if (a_moves && b_moves)
            for (int64_t i = 0; i < len; ++i) dst[i] = f(x[i], y[i]);
        else if (a_moves)
            for (int64_t i = 0; i < len; ++i) dst[i] = f(x[i], y[0]);
        else if (b_moves)
            for (int64_t i = 0; i < len; ++i) dst[i] = f(x[0], y[i]);
        else
            for (int64_t i = 0; i < len; ++i) dst[i] = f(x[0], y[0]);
    });
}

template <class F>
Tensor zip(const Tensor& a, const Tensor& b, const char* op, F f) {
    check_defined(a, op);
    check_defined(b, op);
    Tensor out = Tensor::empty(a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), op));
    zip_into(out, a, b, f);
    return out;
}

// Throws unless `small` broadcasts to `big` without changing it (in-place ops
// and masked_fill cannot grow their destination).
void check_broadcasts_to(const Shape& small, const Shape& big, const char* op) {
    if (small == big) return;
    bool ok = small.rank() <= big.rank();
    for (int i = 1; ok && i <= small.rank(); ++i) {
        const int64_t d = small[small.rank() - i];
        ok = d == 1 || d == big[big.rank() - i];
    }
    if (!ok)
        throw std::invalid_argument(std::string(op) + ": shape " + small.str() + " does not broadcast to " +
                                    big.str());
}

}  // namespace

// ---- element-wise, one input -------------------------------------------------

Tensor neg(const Tensor& a) { return map(a, "neg", [](real x) { return -x; }); }
// exp, tanh and sigmoid: the fast polynomials of tensor/fast_math.hpp (within
// a few ulp of std::exp and std::tanh, which they replace for speed).
Tensor exp(const Tensor& a) { return map_span(a, "exp", exp_into); }
Tensor log(const Tensor& a) { return map(a, "log", [](real x) { return std::log(x); }); }
Tensor sqrt(const Tensor& a) { return map(a, "sqrt", [](real x) { return std::sqrt(x); }); }
Tensor abs(const Tensor& a) { return map(a, "abs", [](real x) { return std::abs(x); }); }
Tensor square(const Tensor& a) { return map(a, "square", [](real x) { return x * x; }); }
Tensor tanh(const Tensor& a) { return map_span(a, "tanh", tanh_into); }

Tensor sign(const Tensor& a) {
    return map(a, "sign", [](real x) { return static_cast<real>((x > 0) - (x < 0)); });
}

// σ(x) = 1 / (1 + e^-x) (fast_math.hpp: e^-x = ∞ for very negative x gives 0).
Tensor sigmoid(const Tensor& a) { return map_span(a, "sigmoid", sigmoid_into); }

// x > 0 ? x : 0, without a branch (keep_or_zero, tensor/fast_math.hpp).
Tensor relu(const Tensor& a) { return map(a, "relu", [](real x) { return keep_or_zero(x > 0, x); }); }

Tensor leaky_relu(const Tensor& a, real negative_slope) {
    return map(a, "leaky_relu", [negative_slope](real x) { return x > 0 ? x : negative_slope * x; });
}

// GELU(x) = x·Φ(x) = x · ½ (1 + erf(x/√2)), the exact form (not the tanh fit).
Tensor gelu(const Tensor& a) {
    return map(a, "gelu", [](real x) {
        const real inv_sqrt2 = static_cast<real>(0.70710678118654752440);
        return x * real(0.5) * (real(1) + std::erf(x * inv_sqrt2));
    });
}

// softplus(x) = log(1 + e^x) = max(x, 0) + log1p(e^-|x|): the exponential
// never overflows, and log1p keeps the digits when e^-|x| is tiny.
Tensor softplus(const Tensor& a) {
    return map(a, "softplus",
                [](real x) { return (x > 0 ? x : real(0)) + std::log1p(std::exp(-std::abs(x))); });
}

Tensor clamp(const Tensor& a, real lo, real hi) {
    if (lo > hi)
        throw std::invalid_argument("clamp: lower bound " + show(lo) + " is above upper bound " + show(hi));
    return map(a, "clamp", [lo, hi](real x) { return x < lo ? lo : (x > hi ? hi : x); });
}

Tensor pow(const Tensor& a, real exponent) {
    if (exponent == 2) return square(a);
    return map(a, "pow", [exponent](real x) { return std::pow(x, exponent); });
}

// ---- element-wise, two inputs ------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) { return zip(a, b, "add", [](real x, real y) { return x + y; }); }
Tensor sub(const Tensor& a, const Tensor& b) { return zip(a, b, "sub", [](real x, real y) { return x - y; }); }
Tensor mul(const Tensor& a, const Tensor& b) { return zip(a, b, "mul", [](real x, real y) { return x * y; }); }
Tensor div(const Tensor& a, const Tensor& b) { return zip(a, b, "div", [](real x, real y) { return x / y; }); }

Tensor pow(const Tensor& a, const Tensor& b) {
    return zip(a, b, "pow", [](real x, real y) { return std::pow(x, y); });
}
Tensor minimum(const Tensor& a, const Tensor& b) {
    return zip(a, b, "minimum", [](real x, real y) { return y < x ? y : x; });
}
Tensor maximum(const Tensor& a, const Tensor& b) {
    return zip(a, b, "maximum", [](real x, real y) { return y > x ? y : x; });
}

Tensor eq(const Tensor& a, const Tensor& b) {
    return zip(a, b, "eq", [](real x, real y) { return static_cast<real>(x == y); });
}
Tensor gt(const Tensor& a, const Tensor& b) {
    return zip(a, b, "gt", [](real x, real y) { return static_cast<real>(x > y); });
}
Tensor ge(const Tensor& a, const Tensor& b) {
    return zip(a, b, "ge", [](real x, real y) { return static_cast<real>(x >= y); });
}
Tensor lt(const Tensor& a, const Tensor& b) {
    return zip(a, b, "lt", [](real x, real y) { return static_cast<real>(x < y); });
}
Tensor le(const Tensor& a, const Tensor& b) {
    return zip(a, b, "le", [](real x, real y) { return static_cast<real>(x <= y); });
}

// out = cond != 0 ? a : b, the three broadcast together. Rarely hot, so one
// planned loop serves every case.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    check_defined(cond, "where");
    check_defined(a, "where");
    check_defined(b, "where");
    const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
    Tensor out = Tensor::empty(shape);
    if (out.numel() == 0) return out;
    const Shape* shapes[3] = {&cond.shape(), &a.shape(), &b.shape()};
    const BroadcastPlan<3> p = plan_broadcast<3>(shape, shapes);
    const int last = p.rank - 1;
    const int64_t sc = p.strides[0][last], sa = p.strides[1][last], sb = p.strides[2][last];
    const real *pc = cond.data(), *pa = a.data(), *pb = b.data();
    real* po = out.data();
    for_each_row<3>(p, [&](int64_t o, const int64_t* off, int64_t len) {
        for (int64_t i = 0; i < len; ++i)
            po[o + i] = pc[off[0] + i * sc] != 0 ? pa[off[1] + i * sa] : pb[off[2] + i * sb];
    });
    return out;
}

// out = a where mask == 0, value where mask != 0; mask broadcasts to a.
Tensor masked_fill(const Tensor& a, const Tensor& mask, real value) {
    check_defined(a, "masked_fill");
    check_defined(mask, "masked_fill");
    check_broadcasts_to(mask.shape(), a.shape(), "masked_fill");
    Tensor out = Tensor::empty(a.shape());
    zip_into(out, a, mask, [value](real x, real m) { return m != 0 ? value : x; });
    return out;
}

// ---- with a scalar, and the operators ---------------------------------------

Tensor add(const Tensor& a, real b) { return map(a, "add", [b](real x) { return x + b; }); }
Tensor mul(const Tensor& a, real b) { return map(a, "mul", [b](real x) { return x * b; }); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, real b) { return add(a, b); }
Tensor operator*(const Tensor& a, real b) { return mul(a, b); }
Tensor operator*(real a, const Tensor& b) { return mul(b, a); }

// ---- in place ------------------------------------------------------------------

// a += b, b broadcast to a's shape (gradient accumulation uses this).
void add_(Tensor& a, const Tensor& b) {
    check_defined(a, "add_");
    check_defined(b, "add_");
    check_broadcasts_to(b.shape(), a.shape(), "add_");
    zip_into(a, a, b, [](real x, real y) { return x + y; });
}

// a += α·b (the SGD step and scaled gradient accumulation).
void axpy_(Tensor& a, real alpha, const Tensor& b) {
    check_defined(a, "axpy_");
    check_defined(b, "axpy_");
    if (a.shape() != b.shape())
        throw std::invalid_argument("axpy_: shapes " + a.shape().str() + " and " + b.shape().str() +
                                    " differ (axpy_ needs equal shapes)");
    zip_into(a, a, b, [alpha](real x, real y) { return x + alpha * y; });
}

void mul_(Tensor& a, real s) {
    check_defined(a, "mul_");
    real* p = a.data();
    parallel_for(0, a.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) p[i] *= s;
    });
}

}  // namespace attn
