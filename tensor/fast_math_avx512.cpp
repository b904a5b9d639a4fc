// exp, tanh and sigmoid of fast_math.hpp, 16 floats at a time: the loops
// around tensor/fast_math_avx512.hpp's exp16, tanh16 and sigmoid16. Compiled
// with the AVX-512 flags (the Makefile, by file name); fast_math.cpp calls it
// only when CPUID has AVX-512 F, BW, DQ and VL.
#include "tensor/fast_math_avx512.hpp"

#include "tensor/fast_math.hpp"

namespace attn {
namespace {

using avx512::exp16;
using avx512::sigmoid16;
using avx512::tanh16;

// out = f16(in) 16 at a time; the tail by a masked load and store, which
// neither reads nor writes past n.
template <class F16>
void apply16(const float* in, float* out, int64_t n, F16 f16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, f16(_mm512_loadu_ps(in + i)));
    if (i < n) {
        const auto mask = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, mask, f16(_mm512_maskz_loadu_ps(mask, in + i)));
    }
}

}  // namespace

// (The functions are handed over as lambdas and forced inline, for the reason
// fast_math_avx2.cpp gives.)
void exp_avx512(const float* in, float* out, int64_t n) {
    apply16(in, out, n, [](__m512 x) { return exp16(x); });
}
void tanh_avx512(const float* in, float* out, int64_t n) {
    apply16(in, out, n, [](__m512 x) { return tanh16(x); });
}
void sigmoid_avx512(const float* in, float* out, int64_t n) {
    apply16(in, out, n, [](__m512 x) { return sigmoid16(x); });
}

}  // namespace attn
