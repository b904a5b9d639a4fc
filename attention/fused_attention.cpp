// The fused scaled dot-product attention: forward and backward tile loops.
// attention/fused_attention.hpp has the formulas; each loop below carries the
// line of the formula it computes, and the shape of the tile it produces.
//
// Legend: batch = the leading axes flattened (B, or B·h for heads); m queries,
// n keys; a tile is Br query rows × Bc key columns; S, P, dP are tiles stored
// with a row stride of Bc. Q, K, V, O are read and written through
// Sizes::offset and Sizes::stride, which also cover the heads side by side
// (scaled_dot_product_attention_fused_heads).
#include "attention/fused_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/scaled_dot_product.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {
namespace {

constexpr real kNegInf = -std::numeric_limits<real>::infinity();
constexpr int64_t Br = kFusedBlockQueries;
constexpr int64_t Bc = kFusedBlockKeys;
const char* const kOp = "scaled_dot_product_attention_fused";
const char* const kOpHeads = "scaled_dot_product_attention_fused_heads";

// The sizes of the problem: `batch` independent attentions of m queries over n keys.
struct Sizes {
    int64_t batch = 0, m = 0, n = 0, d_k = 0, d_v = 0;
    real scale = 1;  // 1/√d_k
    bool causal = false;
    // How the attentions sit in memory. heads = 1: attention b's rows of an
    // operand `width` wide (Q, K, V, O and their gradients) are contiguous,
    // …×rows×width. heads = h > 1: the operands are B×rows×(h·width) and
    // attention b is example b / h, head b % h: columns (b % h)·width …
    // (b % h + 1)·width − 1 of each of that example's rows.
    int64_t heads = 1;
    // Where attention b's first row starts, and how far apart its rows are.
    int64_t offset(int64_t b, int64_t rows, int64_t width) const {
        return ((b / heads) * rows * heads + b % heads) * width;
    }
    int64_t stride(int64_t width) const { return heads * width; }
    // The last key query i may see: j ≤ i + n − m under the causal mask
    // (negative: none), else every key.
    int64_t last_key(int64_t i) const { return causal ? std::min(n - 1, i + n - m) : n - 1; }
};

// A keep mask broadcast to batch×m×n without being expanded: element (b, i, j)
// is data[offset[b] + i·row + j·col]; a stride of 0 repeats a broadcast axis.
struct BroadcastMask {
    Tensor tensor;
    std::vector<int64_t> offset;  // one per flat batch index
    int64_t row = 0, col = 0;
    bool defined() const { return tensor.defined(); }
    const real* at(int64_t b, int64_t i, int64_t j) const { return tensor.data() + offset[b] + i * row + j * col; }
};

BroadcastMask broadcast_mask(const char* op, const Tensor& mask, const Shape& scores, int64_t batch) {
    BroadcastMask out;
    if (!mask.defined()) return out;
    const int R = scores.rank(), shift = R - mask.rank();
    bool fits = shift >= 0;
    for (int a = 0; fits && a < mask.rank(); ++a) fits = mask.shape()[a] == 1 || mask.shape()[a] == scores[a + shift];
    if (!fits)
        throw std::invalid_argument(std::string(op) + ": mask " + mask.shape().str() +
                                    " does not broadcast to the scores " + scores.str());
    // The stride of scores' axis a in the mask: 0 where the mask has no such
    // axis or has size 1 (broadcast), else the mask's own contiguous stride.
    auto stride = [&](int a) { return a < shift || mask.shape()[a - shift] == 1 ? 0 : mask.shape().stride(a - shift); };
    out.tensor = mask;
    out.row = stride(R - 2);
    out.col = stride(R - 1);
    out.offset.resize(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
        int64_t rest = b, offset = 0;
        for (int a = R - 3; a >= 0; --a) {  // b's multi-index over the leading axes, last axis fastest
            offset += (rest % scores[a]) * stride(a);
            rest /= scores[a];
        }
        out.offset[static_cast<size_t>(b)] = offset;
    }
    return out;
}

// What mask_tile applies to a tile of scores: the keep mask, and the keys
// whose row held a non-finite value (FiniteKeysValues in
// attention/padding.hpp: K itself then holds 0 there).
struct ScoreMask {
    BroadcastMask keep;
    Tensor bad_keys;  // …×1×n of 0/1 (batch×n in memory); undefined when every key is finite
};

// S_rc = NaN where key j0 + c is bad, then S_rc = −∞ where the keep mask is 0
// or the causal rule hides key j0 + c from query i0 + r (so a bad key reaches
// only the queries that may see it). S is rows×cols with row stride lds.
void mask_tile(const Sizes& p, const ScoreMask& masks, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
               real* S, int64_t lds) {
    const BroadcastMask& mask = masks.keep;
    const bool crosses_diagonal = p.causal && j0 + cols - 1 > p.last_key(i0);
    const real* bad = masks.bad_keys.defined() ? masks.bad_keys.data() + b * p.n + j0 : nullptr;
    if (!mask.defined() && !crosses_diagonal && !bad) return;
    for (int64_t r = 0; r < rows; ++r) {
        real* s = S + r * lds;
        if (bad)
            for (int64_t c = 0; c < cols; ++c)
                if (bad[c] != 0) s[c] = std::numeric_limits<real>::quiet_NaN();
        if (mask.defined()) {
            const real* keep = mask.at(b, i0 + r, j0);
            for (int64_t c = 0; c < cols; ++c)
                if (keep[c * mask.col] == 0) s[c] = kNegInf;
        }
        if (crosses_diagonal)
            for (int64_t c = std::max<int64_t>(0, p.last_key(i0 + r) + 1 - j0); c < cols; ++c) s[c] = kNegInf;
    }
}

// ---- row kernels ------------------------------------------------------------------
// The element-wise work on the rows of a tile, written on float vectors (the
// GCC/Clang vector extension). Left to itself GCC keeps these loops scalar at
// -O2 without -ffast-math (a float comparison may trap, a float sum may not be
// reordered), and then the exponentials cost more than the tile products. The
// exponentials, most of the work, use the vector width of the GEMM's path
// (tensor/gemm/gemm.hpp: 16 lanes with AVX-512, 8 with AVX2, else 4: SSE2 on
// any x86-64, NEON on ARM); the row maxima 8 with AVX2 or AVX-512 (see
// row_max), the softmax backward 4. The double build (gradient checks) runs
// the same rows as plain loops with std::exp.

#ifndef ATTN_DOUBLE

using Vec4 = float __attribute__((vector_size(16)));
constexpr float kInfF = std::numeric_limits<float>::infinity();

inline Vec4 load4(const float* p) {
    Vec4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store4(float* p, Vec4 v) { std::memcpy(p, &v, sizeof v); }

// Vector types of W lanes; spelled out per width because GCC ignores a
// vector_size that depends on a template parameter. The helpers below take
// and give vectors by reference: a vector passed by value is an ABI question
// for GCC (it warns), even when the call is inlined.
template <int W>
struct Lanes;
template <>
struct Lanes<4> {
    using F = float __attribute__((vector_size(16)));
    using I = int32_t __attribute__((vector_size(16)));
};
template <>
struct Lanes<8> {
    using F = float __attribute__((vector_size(32)));
    using I = int32_t __attribute__((vector_size(32)));
};
template <>
struct Lanes<16> {
    using F = float __attribute__((vector_size(64)));
    using I = int32_t __attribute__((vector_size(64)));
};

// v's lower and upper halves, as vectors of W/2 lanes.
template <int W>
[[gnu::always_inline]] inline void halves(const typename Lanes<W>::F& v, typename Lanes<W / 2>::F& lo,
                                          typename Lanes<W / 2>::F& hi) {
    std::memcpy(&lo, &v, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
}

// The sum of v's lanes, pairwise: the halves added until four lanes remain
// (log₂ W dependent additions, not W).
template <int W>
[[gnu::always_inline]] inline float sum_lanes(const typename Lanes<W>::F& v) {
    if constexpr (W == 4) {
        return (v[0] + v[2]) + (v[1] + v[3]);
    } else {
        typename Lanes<W / 2>::F lo, hi;
        halves<W>(v, lo, hi);
        lo += hi;
        return sum_lanes<W / 2>(lo);
    }
}

// max(a, b), NaN if either is NaN: a row with a NaN score must come out NaN,
// as the composite's softmax makes it, not be taken for a fully masked row
// (a plain b > a comparison is false for NaN and would skip it).
inline float nan_max(float a, float b) { return a > b || a != a ? a : b; }

// m ← nan_max(m, v) lane by lane: v where it is larger or NaN.
template <int W>
[[gnu::always_inline]] inline void nan_max_lanes(typename Lanes<W>::F& m, const typename Lanes<W>::F& v) {
    using I = typename Lanes<W>::I;
    const I take = (v > m) | (v != v);
    m = __builtin_bit_cast(typename Lanes<W>::F, (take & __builtin_bit_cast(I, v)) | (~take & __builtin_bit_cast(I, m)));
}

// The largest of v's lanes (NaN if any is), by halves as sum_lanes.
template <int W>
[[gnu::always_inline]] inline float max_lanes(const typename Lanes<W>::F& v) {
    if constexpr (W == 4) {
        return nan_max(nan_max(v[0], v[2]), nan_max(v[1], v[3]));
    } else {
        typename Lanes<W / 2>::F lo, hi;
        halves<W>(v, lo, hi);
        nan_max_lanes<W / 2>(lo, hi);
        return max_lanes<W / 2>(lo);
    }
}

// max_c x_c, NaN if any x_c is NaN; W values at a time.
template <int W>
[[gnu::always_inline]] inline float row_max_lanes(const float* x, int64_t n) {
    using F = typename Lanes<W>::F;
    F m = F{} - kInfF;
    int64_t c = 0;
    for (; c + W <= n; c += W) {
        F v;
        std::memcpy(&v, x + c, sizeof v);
        nan_max_lanes<W>(m, v);
    }
    float best = max_lanes<W>(m);
    for (; c < n; ++c) best = nan_max(best, x[c]);
    return best;
}

// v ← e^v on each lane (v already shifted, so v ≤ 0 but for rounding). e^x to
// within 1e-7 relative for x ≥ −87, and exactly 0 below (so e^−∞ = 0):
// x = n·ln2 + r with |r| ≤ ln2/2 (Cody–Waite, ln2 split in two), e^r by
// Cephes' degree-6 polynomial, 2^n written into the exponent bits.
template <int W>
[[gnu::always_inline]] inline void exp_lanes(typename Lanes<W>::F& v) {
    using F = typename Lanes<W>::F;
    using I = typename Lanes<W>::I;
    using namespace fast_math_constants;
    const I under = v < -87.0f, over = v > 88.0f;
    v = __builtin_bit_cast(F, (over & __builtin_bit_cast(I, F{} + 88.0f)) | (~over & __builtin_bit_cast(I, v)));
    v = __builtin_bit_cast(F, (under & __builtin_bit_cast(I, F{} - 87.0f)) | (~under & __builtin_bit_cast(I, v)));
    // t = x/ln2 + 1.5·2²³ rounds x/ln2 to the integer n, which sits in t's low mantissa bits
    const F t = v * log2e + 12582912.0f;
    const F n_ln2 = t - 12582912.0f;
    const F r = v - n_ln2 * ln2_hi - n_ln2 * ln2_lo;
    // e^r ≈ 1 + r + r²·P(r)
    F p = F{} + exp_p[0];
    p = p * r + exp_p[1];
    p = p * r + exp_p[2];
    p = p * r + exp_p[3];
    p = p * r + exp_p[4];
    p = p * r + exp_p[5];
    p = p * r * r + r + 1.0f;
    // e^x = e^r · 2^n, with 2^n's exponent field n + 127
    const F two_n = __builtin_bit_cast(F, (__builtin_bit_cast(I, t) - 0x4B400000 + 127) << 23);
    v = __builtin_bit_cast(F, ~under & __builtin_bit_cast(I, p * two_n));
}

// x_c ← e^(x_c − shift), returns Σ_c x_c; W values at a time. The whole
// vectors of a row are loaded and stored with copies of a fixed size (one vector instruction each); the tail, if any, goes through a
// buffer padded with −∞. (A copy of a size known only at run time compiles
// to a string move, which costs more than the exponentials.)
template <int W>
[[gnu::always_inline]] inline float exp_shifted_sum_lanes(float* x, int64_t n, float shift) {
    using F = typename Lanes<W>::F;
    static_assert(sizeof(F) == W * sizeof(float));
    F sum = {};
    int64_t c = 0;
    for (; c + W <= n; c += W) {
        F v;
        std::memcpy(&v, x + c, sizeof v);
        v -= shift;
        exp_lanes<W>(v);
        std::memcpy(x + c, &v, sizeof v);
        sum += v;
    }
    if (c < n) {  // the row's tail: n − c < W values, the other lanes −∞ (e^−∞ = 0)
        float lanes[W];
        std::fill(lanes, lanes + W, -kInfF);
        std::copy(x + c, x + n, lanes);
        F v;
        std::memcpy(&v, lanes, sizeof v);
        v -= shift;
        exp_lanes<W>(v);
        std::memcpy(lanes, &v, sizeof v);
        std::copy(lanes, lanes + (n - c), x + c);
        sum += v;
    }
    return sum_lanes<W>(sum);
}
#if defined(__x86_64__)
[[gnu::target("avx512f")]] inline float exp_shifted_sum_avx512(float* x, int64_t n, float shift) {
    return exp_shifted_sum_lanes<16>(x, n, shift);
}
[[gnu::target("avx2")]] inline float exp_shifted_sum_avx2(float* x, int64_t n, float shift) {
    return exp_shifted_sum_lanes<8>(x, n, shift);
}
#endif
inline float exp_shifted_sum(float* x, int64_t n, float shift) {
#if defined(__x86_64__)
    static const GemmPath path = gemm_default_path();
    if (path == GemmPath::avx512) return exp_shifted_sum_avx512(x, n, shift);
    if (path == GemmPath::avx2) return exp_shifted_sum_avx2(x, n, shift);
#endif
    return exp_shifted_sum_lanes<4>(x, n, shift);
}

// The row maximum takes 8 lanes on the AVX-512 path too: with AVX-512F
// alone a comparison's result lives in a mask register, and GCC turns the
// lane-wise select of nan_max_lanes into scalar code (slower than 4 lanes).
#if defined(__x86_64__)
[[gnu::target("avx2")]] inline float row_max_avx2(const float* x, int64_t n) { return row_max_lanes<8>(x, n); }
#endif
inline float row_max(const float* x, int64_t n) {
#if defined(__x86_64__)
    static const GemmPath path = gemm_default_path();
    if (path == GemmPath::avx512 || path == GemmPath::avx2) return row_max_avx2(x, n);
#endif
    return row_max_lanes<4>(x, n);
}

// d_c ← p_c (d_c − D): the softmax backward on one row
inline void softmax_backward_row(float* d, const float* p, int64_t n, float D) {
    int64_t c = 0;
    for (; c + 4 <= n; c += 4) store4(d + c, load4(p + c) * (load4(d + c) - D));
    for (; c < n; ++c) d[c] = p[c] * (d[c] - D);
}

#else  // the double build: plain loops

inline double nan_max(double a, double b) { return a > b || a != a ? a : b; }  // NaN if either is
inline double row_max(const double* x, int64_t n) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < n; ++c) m = nan_max(m, x[c]);
    return m;
}
inline double exp_shifted_sum(double* x, int64_t n, double shift) {
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += (x[c] = std::exp(x[c] - shift));
    return sum;
}
inline void softmax_backward_row(double* d, const double* p, int64_t n, double D) {
    for (int64_t c = 0; c < n; ++c) d[c] = p[c] * (d[c] - D);
}

#endif

// How many (batch, block) tasks a thread takes at least: about 2^18
// multiply-adds, so that tiny problems stay on one thread.
int64_t grain_for(const Sizes& p, int64_t rows_per_task) {
    const int64_t madds = std::max<int64_t>(1, rows_per_task * p.n * (p.d_k + p.d_v));
    return std::max<int64_t>(1, (int64_t(1) << 18) / madds);
}

// ---- forward ---------------------------------------------------------------------

struct ForwardScratch {
    std::vector<real> tile = std::vector<real>(Br * Bc);  // S, then P in place
    std::vector<real> mu = std::vector<real>(Br), ell = std::vector<real>(Br);
};

// Query rows [i0, i0 + rows) of attention b: their outputs O and log-sum-exps L.
void forward_block(const Sizes& p, const ScoreMask& mask, const real* Q, const real* K, const real* V, real* O,
                   real* L, int64_t b, int64_t i0, int64_t rows, ForwardScratch& s) {
    const int64_t ldq = p.stride(p.d_k), ldk = p.stride(p.d_k), ldv = p.stride(p.d_v), ldo = p.stride(p.d_v);
    const real* q = Q + p.offset(b, p.m, p.d_k) + i0 * ldq;
    const real *Kb = K + p.offset(b, p.n, p.d_k), *Vb = V + p.offset(b, p.n, p.d_v);
    real* o = O + p.offset(b, p.m, p.d_v) + i0 * ldo;
    real *mu = s.mu.data(), *ell = s.ell.data(), *S = s.tile.data();
    for (int64_t r = 0; r < rows; ++r) std::fill(o + r * ldo, o + r * ldo + p.d_v, real(0));
    std::fill(mu, mu + rows, kNegInf);
    std::fill(ell, ell + rows, real(0));
    const int64_t key_end = p.last_key(i0 + rows - 1) + 1;  // later keys are hidden from every row
    for (int64_t j0 = 0; j0 < key_end; j0 += Bc) {
        const int64_t cols = std::min(Bc, key_end - j0);
        // S = Q_i K_jᵀ / √d_k                                          rows×cols
        gemm(false, true, rows, cols, p.d_k, p.scale, q, ldq, Kb + j0 * ldk, ldk, real(0), S, Bc);
        mask_tile(p, mask, b, i0, rows, j0, cols, S, Bc);
        for (int64_t r = 0; r < rows; ++r) {
            real* sr = S + r * Bc;
            // μ' = max(μ, rowmax S)      (NaN once any score of the row is NaN: then so are ℓ, O_i, L_i)
            const real mu_new = nan_max(mu[r], row_max(sr, cols));
            if (mu_new == kNegInf) {  // every key so far is masked: nothing to add
                std::fill(sr, sr + cols, real(0));
                continue;
            }
            // P = exp(S − μ')        ℓ = e^(μ−μ') ℓ + rowsum P        o = e^(μ−μ') o
            // (the row's first visible block: μ = −∞, ℓ = 0 and o = 0, nothing to rescale)
            const real block_sum = exp_shifted_sum(sr, cols, mu_new);
            if (mu[r] == kNegInf) {
                ell[r] = block_sum;
            } else {
                const real rescale = std::exp(mu[r] - mu_new);
                ell[r] = rescale * ell[r] + block_sum;
                if (rescale != 1)
                    for (real *orow = o + r * ldo, *end = orow + p.d_v; orow != end; ++orow) *orow *= rescale;
            }
            mu[r] = mu_new;
        }
        // o += P V_j                                                   rows×d_v
        gemm(false, false, rows, p.d_v, cols, real(1), S, Bc, Vb + j0 * ldv, ldv, real(1), o, ldo);
    }
    // O_i = o / ℓ,  L_i = μ + log ℓ       (ℓ = 0: every key masked → O_i = 0, L_i = −∞)
    for (int64_t r = 0; r < rows; ++r) {
        real* orow = o + r * ldo;
        real& lse = L[b * p.m + i0 + r];
        if (ell[r] == 0) {
            std::fill(orow, orow + p.d_v, real(0));
            lse = kNegInf;
            continue;
        }
        const real inv = 1 / ell[r];
        for (int64_t c = 0; c < p.d_v; ++c) orow[c] *= inv;
        lse = mu[r] + std::log(ell[r]);
    }
}

void forward(const Sizes& p, const ScoreMask& mask, const real* Q, const real* K, const real* V, real* O,
             real* L) {
    const int64_t blocks = (p.m + Br - 1) / Br;
    parallel_for(0, p.batch * blocks, grain_for(p, Br), [&](int64_t t0, int64_t t1) {
        ForwardScratch scratch;
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t b = t / blocks, i0 = (t % blocks) * Br;
            forward_block(p, mask, Q, K, V, O, L, b, i0, std::min(Br, p.m - i0), scratch);
        }
    });
}

// ---- backward --------------------------------------------------------------------

struct BackwardScratch {
    std::vector<real> P = std::vector<real>(Br * Bc), dP = std::vector<real>(Br * Bc), D;
};

// Adds the gradients of attention b into dQ, dK, dV (each null when that
// input needs none).
void backward_batch(const Sizes& p, const ScoreMask& mask, const real* Q, const real* K, const real* V,
                    const real* O, const real* L, const real* dO, real* dQ, real* dK, real* dV, int64_t b,
                    BackwardScratch& s) {
    const int64_t ldq = p.stride(p.d_k), ldk = p.stride(p.d_k), ldv = p.stride(p.d_v), ldo = p.stride(p.d_v);
    const int64_t q_at = p.offset(b, p.m, p.d_k), k_at = p.offset(b, p.n, p.d_k);
    const int64_t v_at = p.offset(b, p.n, p.d_v), o_at = p.offset(b, p.m, p.d_v);
    Q += q_at, K += k_at, V += v_at;
    O += o_at, dO += o_at, L += b * p.m;
    if (dQ) dQ += q_at;
    if (dK) dK += k_at;
    if (dV) dV += v_at;
    // D_i = Σ_c dO_ic O_ic                                              m
    s.D.assign(static_cast<size_t>(p.m), real(0));
    for (int64_t i = 0; i < p.m; ++i) {
        real d = 0;
        for (int64_t c = 0; c < p.d_v; ++c) d += dO[i * ldo + c] * O[i * ldo + c];
        s.D[static_cast<size_t>(i)] = d;
    }
    real *P = s.P.data(), *dS = s.dP.data();
    for (int64_t j0 = 0; j0 < p.n; j0 += Bc) {
        const int64_t cols = std::min(Bc, p.n - j0);
        const real *Kj = K + j0 * ldk, *Vj = V + j0 * ldv;
        // Queries before the first that sees key j0 (causal: j0 ≤ i + n − m) see none of this block.
        const int64_t first_query = p.causal ? std::max<int64_t>(0, j0 - (p.n - p.m)) : 0;
        for (int64_t i0 = first_query / Br * Br; i0 < p.m; i0 += Br) {
            const int64_t rows = std::min(Br, p.m - i0);
            const real *Qi = Q + i0 * ldq, *dOi = dO + i0 * ldo;
            // P = exp(Q_i K_jᵀ / √d_k − L_i)                              rows×cols
            gemm(false, true, rows, cols, p.d_k, p.scale, Qi, ldq, Kj, ldk, real(0), P, Bc);
            mask_tile(p, mask, b, i0, rows, j0, cols, P, Bc);
            for (int64_t r = 0; r < rows; ++r) {
                const real lse = L[i0 + r];
                if (lse == kNegInf)  // every key of this query is masked
                    std::fill(P + r * Bc, P + r * Bc + cols, real(0));
                else
                    exp_shifted_sum(P + r * Bc, cols, lse);
            }
            // dV_j += Pᵀ dO_i                                              cols×d_v
            if (dV) gemm(true, false, cols, p.d_v, rows, real(1), P, Bc, dOi, ldo, real(1), dV + j0 * ldv, ldv);
            if (!dQ && !dK) continue;
            // dP = dO_i V_jᵀ                                               rows×cols
            gemm(false, true, rows, cols, p.d_v, real(1), dOi, ldo, Vj, ldv, real(0), dS, Bc);
            // dS = P ∘ (dP − D_i)
            for (int64_t r = 0; r < rows; ++r)
                softmax_backward_row(dS + r * Bc, P + r * Bc, cols, s.D[static_cast<size_t>(i0 + r)]);
            // dQ_i += dS K_j / √d_k                                        rows×d_k
            if (dQ) gemm(false, false, rows, p.d_k, cols, p.scale, dS, Bc, Kj, ldk, real(1), dQ + i0 * ldq, ldq);
            // dK_j += dSᵀ Q_i / √d_k                                       cols×d_k
            if (dK) gemm(true, false, cols, p.d_k, rows, p.scale, dS, Bc, Qi, ldq, real(1), dK + j0 * ldk, ldk);
        }
    }
}

// ---- the weights, on request ----------------------------------------------------

// A = exp(Q Kᵀ / √d_k − L) with masked entries 0: the same weights the
// forward used, materialised batch×m×n for drawing, into A (its storage taken
// by weights_storage before the forward).
void materialise_weights(const Sizes& p, const ScoreMask& mask, const real* Q, const real* K, const real* L,
                         Tensor& A) {
    real* a = A.data();
    const int64_t blocks = (p.m + Br - 1) / Br;
    parallel_for(0, p.batch * blocks, grain_for(p, Br), [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t b = t / blocks, i0 = (t % blocks) * Br, rows = std::min(Br, p.m - i0);
            real* S = a + (b * p.m + i0) * p.n;
            const int64_t ld = p.stride(p.d_k);
            gemm(false, true, rows, p.n, p.d_k, p.scale, Q + p.offset(b, p.m, p.d_k) + i0 * ld, ld,
                 K + p.offset(b, p.n, p.d_k), ld, real(0), S, p.n);
            mask_tile(p, mask, b, i0, rows, 0, p.n, S, p.n);
            for (int64_t r = 0; r < rows; ++r) {
                const real lse = L[b * p.m + i0 + r];
                if (lse == kNegInf)
                    std::fill(S + r * p.n, S + (r + 1) * p.n, real(0));
                else
                    exp_shifted_sum(S + r * p.n, p.n, lse);
            }
        }
    });
}

// The weights' storage, batch×m×n, taken before any O(m·n) work: asked for
// at m = n = 2²⁰ they need 4 TiB, and the allocator's refusal should come at
// once, in the op's terms, not after a forward pass of hours. The allocator
// checks the size against storage_memory_limit() (and Shape::numel against
// int64 overflow); both throw std::length_error, rethrown here with the shapes.
Tensor weights_storage(const char* op, const Var& q, const Var& k, const Shape& scores_shape) {
    try {
        return Tensor::empty(scores_shape);
    } catch (const std::length_error& e) {
        throw std::length_error(std::string(op) + ": the weights " + scores_shape.str() + " of queries " +
                                q.shape().str() + " and keys " + k.shape().str() +
                                " do not fit in memory (need_weights; leave it off to attend in O(m) memory): " +
                                e.what());
    }
}

// Runs the kernels on inputs q, k, v whose non-finite values, if any, have
// been set aside (see the callers), and records one node: its backward keeps
// Q, K, V and L (batch×m); the output O is the node's own value.
AttentionOutput attend(const char* op, const Sizes& p, const ScoreMask& bm, const Var& q, const Var& k,
                       const Var& v, const Shape& scores_shape, const Shape& output_shape, bool need_weights) {
    const Tensor Q = q.value(), K = k.value(), V = v.value();
    Tensor A = need_weights ? weights_storage(op, q, k, scores_shape) : Tensor();
    Tensor O = Tensor::empty(output_shape), L = Tensor::empty(Shape{p.batch, p.m});
    forward(p, bm, Q.data(), K.data(), V.data(), O.data(), L.data());

    Var weights;
    if (need_weights) {
        materialise_weights(p, bm, Q.data(), K.data(), L.data(), A);
        weights = Var(A);
    }

    Var output = record(op, O, {q, k, v}, [p, bm, Q, K, V, L](Backward& bw) {
        // ∂L/∂Q, ∂L/∂K, ∂L/∂V are added (the kernel only ever does +=) straight into
        // the gradient buffers of the inputs that want them; null skips the others.
        // Attention b only touches its own rows (its own columns of them, with
        // heads side by side), and one thread does all of b, so this is safe
        // even when two inputs are one variable (self-attention on X).
        auto buffer = [&bw](int i) { return bw.needs(i) ? bw.grad_buffer(i).data() : nullptr; };
        real *dq = buffer(0), *dk = buffer(1), *dv = buffer(2);
        const real *dO = bw.grad().data(), *out = bw.output().data();
        parallel_for(0, p.batch, grain_for(p, p.m), [&](int64_t b0, int64_t b1) {
            BackwardScratch scratch;
            for (int64_t b = b0; b < b1; ++b)
                backward_batch(p, bm, Q.data(), K.data(), V.data(), out, L.data(), dO, dq, dk, dv, b, scratch);
        });
    });
    return {output, weights};
}

}  // namespace

AttentionOutput scaled_dot_product_attention_fused(const Var& queries, const Var& keys, const Var& values,
                                                   const Tensor& mask, const FusedAttentionOptions& options) {
    const ProfileScope scope(kOp);
    check_sdpa_inputs(kOp, queries, keys, values);
    const Shape& qs = queries.shape();
    const int R = qs.rank();
    Sizes p;
    p.m = qs[R - 2], p.d_k = qs[R - 1], p.n = keys.size(-2), p.d_v = values.size(-1);
    p.batch = 1;  // the leading axes, flattened
    for (int a = 0; a < R - 2; ++a) p.batch *= qs[a];
    p.scale = real(1) / std::sqrt(static_cast<real>(p.d_k));
    p.causal = options.causal;
    const Shape scores_shape = qs.with(R - 1, p.n);    // …×m×n
    const Shape output_shape = qs.with(R - 1, p.d_v);  // …×m×d_v
    // Non-finite keys and values are set aside as in the composite (attention/
    // padding.hpp, FiniteKeysValues): the kernel reads only finite K and V,
    // mask_tile gives NaN to the scores of bad keys before masking, and the NaN
    // of bad values is put back below, where a query may see them.
    const FiniteKeysValues kv = finite_keys_values(keys, values);
    const ScoreMask bm{broadcast_mask(kOp, mask, scores_shape, p.batch), kv.bad_keys};
    // A query that may attend no key is zeroed when it holds a non-finite
    // value (the mask tensor is built only then), as in the composite.
    Var q = queries;
    if (!finite_everywhere(queries.value()))
        q = hide_fully_masked_queries(queries, combine_masks(mask, p.causal ? causal_mask(p.m, p.n) : Tensor()));

    const AttentionOutput a =
        attend(kOp, p, bm, q, kv.keys, kv.values, scores_shape, output_shape, options.need_weights);
    return {nan_at_seen_bad_values(a.output, mask, options.causal, kv.bad_values), a.weights};
}

AttentionOutput scaled_dot_product_attention_fused_heads(const Var& queries, const Var& keys, const Var& values,
                                                         int64_t heads, const Tensor& mask,
                                                         const FusedAttentionOptions& options) {
    const ProfileScope scope(kOpHeads);
    if (!queries.defined() || !keys.defined() || !values.defined())
        throw std::invalid_argument(std::string(kOpHeads) + ": queries, keys and values must all be defined");
    const Shape &qs = queries.shape(), &ks = keys.shape(), &vs = values.shape();
    const bool fits = heads > 0 && qs.rank() == 3 && ks.rank() == 3 && vs.rank() == 3 && qs[0] == ks[0] &&
                      ks[0] == vs[0] && ks[1] == vs[1] && qs[2] == ks[2] && qs[2] > 0 && qs[2] % heads == 0 &&
                      vs[2] % heads == 0;
    if (!fits)
        throw std::invalid_argument(std::string(kOpHeads) + ": queries " + qs.str() + ", keys " + ks.str() +
                                    " and values " + vs.str() + " with h = " + std::to_string(heads) +
                                    " heads: need B×m×(h·d_k), B×n×(h·d_k) and B×n×(h·d_v), h > 0, d_k > 0");
    const int64_t B = qs[0], m = qs[1], n = ks[1], h = heads;
    // The rules for non-finite values (attention/scaled_dot_product.hpp) are per
    // head: a key is bad for the heads whose columns hold the non-finite
    // value. Rather than a second copy of them, such inputs take the way
    // round, through the heads split apart.
    if (!finite_everywhere(queries.value()) || !finite_everywhere(keys.value()) ||
        !finite_everywhere(values.value())) {
        const AttentionOutput a = scaled_dot_product_attention_fused(
            split_heads(queries, h), split_heads(keys, h), split_heads(values, h), mask, options);
        return {concat_heads(a.output), a.weights};
    }
    Sizes p;
    p.heads = h, p.batch = B * h, p.m = m, p.n = n, p.d_k = qs[2] / h, p.d_v = vs[2] / h;
    p.scale = real(1) / std::sqrt(static_cast<real>(p.d_k));
    p.causal = options.causal;
    const Shape scores_shape{B, h, m, n};
    const ScoreMask bm{broadcast_mask(kOpHeads, mask, scores_shape, p.batch), {}};
    return attend(kOpHeads, p, bm, queries, keys, values, scores_shape, Shape{B, m, vs[2]}, options.need_weights);
}

}  // namespace attn
