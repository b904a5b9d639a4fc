// Fast float versions of exp, tanh and sigmoid, beside the standard library's.
//
// Why: training spends much of its time in these three. glibc's tanhf calls
// expm1f and costs ~20 ns a value here, and its calls cannot be vectorised;
// seq2seq's additive attention alone takes 4 million tanh a step. The versions
// below are branch-free polynomials (Cephes' expf and tanhf coefficients), a
// few ns each as scalars and several values at once where the compiler
// vectorises the 8-wide blocks of the *_into loops.
//
// Accuracy (tests/test_fast_math.cpp sweeps every float in a range and compares
// with std:: in double): exp within 2 ulp, tanh within 3 ulp, sigmoid within
// 4 ulp (the AVX2 loops' FMAs included); special values as std: exp(−∞) = 0, exp(+∞) = +∞,
// tanh(±∞) = ±1, NaN in → NaN out.
//
// With real = double (the gradient checks' build) the *_into loops call
// std::exp / std::tanh: the approximations exist only for float.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tensor/real.hpp"

namespace attn {

// The numbers of exp_fast and tanh_fast, named once for every version of
// them: the scalar ones below, the AVX2 and AVX-512 loops
// (fast_math_avx2.cpp, fast_math_avx512.hpp) and the softmax rows of
// attention/fused_attention.cpp, each evaluating them in the same order.
namespace fast_math_constants {
inline constexpr float exp_lo = -104.0f;     // e^exp_lo is below the smallest denormal
inline constexpr float exp_hi = 88.72284f;   // e^exp_hi ≈ FLT_MAX
inline constexpr float log2e = 1.44269504088896341f;
inline constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;  // ln 2 = ln2_hi + ln2_lo, r exact
// e^r ≈ 1 + r + r²·P(r), P's coefficients from the highest degree (Cephes expf)
inline constexpr float exp_p[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
// tanh x ≈ x + x³·Q(x²) for |x| < tanh_small, Q's coefficients from the highest degree (Cephes tanhf)
inline constexpr float tanh_q[5] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                                    -3.33332819422e-1f};
inline constexpr float tanh_small = 0.625f;
}  // namespace fast_math_constants

// e^x = 2^n · e^r with n = round(x / ln 2) and r = x − n·ln 2 in [−ln2/2, ln2/2];
// e^r by a degree-7 polynomial (Cephes expf), 2^n by building the float's
// exponent bits (in two halves, so that n from −150 to 128 all stay normal).
inline float exp_fast(float x) {
    using namespace fast_math_constants;
    float xc = x < exp_lo ? exp_lo : x;
    xc = xc > exp_hi ? exp_hi : xc;
    xc = x != x ? 0.0f : xc;  // NaN: any finite value, replaced at the end
    const float n = (xc * log2e + 12582912.0f) - 12582912.0f;  // round to nearest (2^23·1.5 trick)
    const float r = (xc - n * ln2_hi) - n * ln2_lo;
    float p = exp_p[0];
    p = p * r + exp_p[1];
    p = p * r + exp_p[2];
    p = p * r + exp_p[3];
    p = p * r + exp_p[4];
    p = p * r + exp_p[5];
    const float er = p * r * r + r + 1.0f;  // e^r
    const auto k = static_cast<int32_t>(n);
    const int32_t k1 = k / 2, k2 = k - k1;  // 2^n = 2^k1 · 2^k2, each a normal float
    float y = er * std::bit_cast<float>((k1 + 127) << 23) * std::bit_cast<float>((k2 + 127) << 23);
    y = x > exp_hi ? INFINITY : y;
    y = x < exp_lo ? 0.0f : y;
    return x != x ? x : y;  // NaN in, NaN out
}

// tanh x: for |x| < 0.625 the odd polynomial x + x³·P(x²) (Cephes tanhf), which
// keeps full relative precision near 0; beyond, 1 − 2/(e^{2|x|} + 1) with the
// sign of x (e^{2|x|} = ∞ gives exactly 1).
inline float tanh_fast(float x) {
    using namespace fast_math_constants;
    const float z = x * x;
    float p = tanh_q[0];
    p = p * z + tanh_q[1];
    p = p * z + tanh_q[2];
    p = p * z + tanh_q[3];
    p = p * z + tanh_q[4];
    const float small = x + x * z * p;
    const float a = std::fabs(x);
    const float large = std::copysign(1.0f - 2.0f / (exp_fast(2.0f * a) + 1.0f), x);
    return a < tanh_small ? small : large;
}

// σ(x) = 1 / (1 + e^−x): e^−x = ∞ (x very negative) gives 0, e^−x = 0 gives 1.
inline float sigmoid_fast(float x) { return 1.0f / (1.0f + exp_fast(-x)); }

// The same on real (float: the fast versions; double: the standard library).
inline real exp_real(real x) {
    if constexpr (sizeof(real) == sizeof(float)) return exp_fast(x);
    else return std::exp(x);
}
inline real tanh_real(real x) {
    if constexpr (sizeof(real) == sizeof(float)) return tanh_fast(x);
    else return std::tanh(x);
}
// σ(x) without overflow for large |x|.
inline real sigmoid_real(real x) {
    if constexpr (sizeof(real) == sizeof(float)) {
        return sigmoid_fast(x);
    } else {
        if (x >= 0) return 1 / (1 + std::exp(-x));
        const real e = std::exp(x);
        return e / (1 + e);
    }
}

// keep ? x : +0, without a branch: x's bits anded with a mask of all ones or
// all zeros. For relu and its gradient: on random signs, `x > 0 ? x : 0`
// compiles to a branch that mispredicts half the time, and a misprediction
// costs ten times the two bit operations here (docs/performance.md).
// (Multiplying by the condition is no better: the int-to-float conversion
// serialises.)
inline real keep_or_zero(bool keep, real x) {
    using Bits = std::conditional_t<sizeof(real) == 4, uint32_t, uint64_t>;
    return std::bit_cast<real>(std::bit_cast<Bits>(x) & (Bits{0} - static_cast<Bits>(keep)));
}

// out[i] = f(in[i]) for i < n (out may be in). On a CPU with AVX-512 (and
// real = float) 16 values at a time by fast_math_avx512.cpp, with AVX2 and FMA
// 8 at a time by fast_math_avx2.cpp: the same formulas in vector registers.
// Else one by one with the functions above. ATTN_FAST_MATH=scalar|avx2|avx512
// forces a loop (to compare; one the CPU lacks is refused by an exception).
void exp_into(const real* in, real* out, int64_t n);
void tanh_into(const real* in, real* out, int64_t n);
void sigmoid_into(const real* in, real* out, int64_t n);

enum class FastMathPath { scalar, avx2, avx512 };
// The loop the *_into functions use (chosen once, from the CPU and ATTN_FAST_MATH).
FastMathPath fast_math_path();
const char* to_string(FastMathPath path);

// The vector versions, for the tests that they agree with the scalar ones
// (n ≥ 0; call only when the CPU has the instructions).
bool fast_math_avx2_available();
bool fast_math_avx512_available();
void exp_avx2(const float* in, float* out, int64_t n);
void tanh_avx2(const float* in, float* out, int64_t n);
void sigmoid_avx2(const float* in, float* out, int64_t n);
void exp_avx512(const float* in, float* out, int64_t n);
void tanh_avx512(const float* in, float* out, int64_t n);
void sigmoid_avx512(const float* in, float* out, int64_t n);

}  // namespace attn
