// Which loop runs exp_into, tanh_into and sigmoid_into: the widest vector loop
// the CPU has when real is float, else the scalar functions one by one.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tensor/fast_math.hpp"
#include "tensor/gemm/gemm_internal.hpp"

namespace attn {

bool fast_math_avx2_available() {
#if defined(__x86_64__)
    return gemm_internal::cpu_features().avx2;
#else
    return false;
#endif
}

bool fast_math_avx512_available() {
#if defined(__x86_64__)
    return gemm_internal::cpu_features().avx512;
#else
    return false;
#endif
}

const char* to_string(FastMathPath path) {
    switch (path) {
        case FastMathPath::scalar: return "scalar";
        case FastMathPath::avx2: return "avx2";
        case FastMathPath::avx512: return "avx512";
    }
    return "unknown";
}

FastMathPath fast_math_path() {
    static const FastMathPath path = [] {
        // The vector loops are float's alone: the double build (the gradient
        // checks) always runs std:: one value at a time.
        if (sizeof(real) != sizeof(float)) return FastMathPath::scalar;
        const char* env = std::getenv("ATTN_FAST_MATH");
        const std::string forced = env ? env : "";
        if (forced == "scalar") return FastMathPath::scalar;
        if (forced == "avx2" || forced == "avx512") {
            const bool have = forced == "avx2" ? fast_math_avx2_available() : fast_math_avx512_available();
            if (!have)
                throw std::runtime_error("ATTN_FAST_MATH=" + forced + ": this CPU does not have " + forced);
            return forced == "avx2" ? FastMathPath::avx2 : FastMathPath::avx512;
        }
        if (!forced.empty())
            throw std::runtime_error("ATTN_FAST_MATH=" + forced + ": expected scalar, avx2 or avx512");
        return fast_math_avx512_available() ? FastMathPath::avx512
               : fast_math_avx2_available() ? FastMathPath::avx2
                                            : FastMathPath::scalar;
    }();
    return path;
}

#if !defined(__x86_64__)
void exp_avx2(const float*, float*, int64_t) {}
void tanh_avx2(const float*, float*, int64_t) {}
void sigmoid_avx2(const float*, float*, int64_t) {}
void exp_avx512(const float*, float*, int64_t) {}
void tanh_avx512(const float*, float*, int64_t) {}
void sigmoid_avx512(const float*, float*, int64_t) {}
#endif

namespace {

using VectorLoop = void (*)(const float*, float*, int64_t);

// The vector loop of the chosen path on float, else f one by one (a template,
// so that with real = double the float-only branch is never compiled).
template <class R, class F>
void run(const R* in, R* out, int64_t n, VectorLoop avx2, VectorLoop avx512, F f) {
    if constexpr (std::is_same_v<R, float>) {
        switch (fast_math_path()) {
            case FastMathPath::avx512: return avx512(in, out, n);
            case FastMathPath::avx2: return avx2(in, out, n);
            case FastMathPath::scalar: break;
        }
    }
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

}  // namespace

void exp_into(const real* in, real* out, int64_t n) { run(in, out, n, exp_avx2, exp_avx512, exp_real); }
void tanh_into(const real* in, real* out, int64_t n) { run(in, out, n, tanh_avx2, tanh_avx512, tanh_real); }
void sigmoid_into(const real* in, real* out, int64_t n) {
    run(in, out, n, sigmoid_avx2, sigmoid_avx512, sigmoid_real);
}

}  // namespace attn
