// Which loop runs exp_into, tanh_into and sigmoid_into: the AVX2 one when the
// CPU has it and real is float, else the scalar functions one by one.
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "tensor/fast_math.hpp"
#include "tensor/gemm/gemm_internal.hpp"

namespace attn {

bool fast_math_avx2_enabled() {
    static const bool yes = [] {
        const char* env = std::getenv("ATTN_FAST_MATH");
        if (env && std::strcmp(env, "scalar") == 0) return false;
        return sizeof(real) == sizeof(float) && fast_math_avx2_available();
    }();
    return yes;
}

bool fast_math_avx2_available() {
#if defined(__x86_64__)
    return gemm_internal::cpu_features().avx2;
#else
    return false;
#endif
}

#if !defined(__x86_64__)
void exp_avx2(const float*, float*, int64_t) {}
void tanh_avx2(const float*, float*, int64_t) {}
void sigmoid_avx2(const float*, float*, int64_t) {}
#endif

namespace {

// The AVX2 loop on float when it may run, else f one by one (a template, so
// that with real = double the float-only branch is never compiled).
template <class R, class F>
void run(const R* in, R* out, int64_t n, void (*avx2)(const float*, float*, int64_t), F f) {
    if constexpr (std::is_same_v<R, float>)
        if (fast_math_avx2_enabled()) return avx2(in, out, n);
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

}  // namespace

void exp_into(const real* in, real* out, int64_t n) { run(in, out, n, exp_avx2, exp_real); }
void tanh_into(const real* in, real* out, int64_t n) { run(in, out, n, tanh_avx2, tanh_real); }
void sigmoid_into(const real* in, real* out, int64_t n) { run(in, out, n, sigmoid_avx2, sigmoid_real); }

}  // namespace attn
