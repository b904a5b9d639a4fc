// tensor/fast_math.hpp: the fast exp, tanh and sigmoid against the standard
// library (computed in double), over a sweep of floats, in ulp; the AVX2
// and AVX-512 loops against the same; special values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor/fast_math.hpp"

using namespace attn;

namespace {

// |got − want| in units of the float spacing at want (denormals: the smallest spacing).
double ulp_error(float got, double want) {
    if (std::isinf(want)) return got == want ? 0 : INFINITY;
    const float w = static_cast<float>(want);
    const float spacing = std::fabs(w) < 1.2e-38f ? 1.4e-45f : std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
    return std::fabs(static_cast<double>(got) - want) / spacing;
}

// Every 97th float in [lo, hi] (about 10 million values in [−110, 100]).
std::vector<float> sweep(float lo, float hi) {
    std::vector<float> xs;
    for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 97) {
        const auto b = static_cast<uint32_t>(bits);
        float x;
        std::memcpy(&x, &b, sizeof x);
        if (x >= lo && x <= hi) xs.push_back(x);
    }
    return xs;
}

double ref_exp(float x) { return std::exp(static_cast<double>(x)); }
double ref_tanh(float x) { return std::tanh(static_cast<double>(x)); }
double ref_sigmoid(float x) { return 1 / (1 + std::exp(-static_cast<double>(x))); }

// The largest error of f against ref over xs, counting only results above FLT_MIN
// (below it, denormal results may lose precision, as they do in glibc).
template <class F, class R>
double max_ulp(const std::vector<float>& xs, F f, R ref) {
    double worst = 0;
    for (float x : xs) {
        const double want = ref(x);
        if (std::fabs(want) < 1.2e-38 && want != 0) continue;
        const double e = ulp_error(f(x), want);
        if (e > worst) worst = e;
    }
    return worst;
}

}  // namespace

TEST_CASE("fast_math: exp, tanh and sigmoid within a few ulp of std") {
    const std::vector<float> xs = sweep(-110, 100);
    CHECK(max_ulp(xs, exp_fast, ref_exp) <= 2);
    CHECK(max_ulp(xs, tanh_fast, ref_tanh) <= 3);
    CHECK(max_ulp(xs, sigmoid_fast, ref_sigmoid) <= 4);
}

TEST_CASE("fast_math: special values") {
    CHECK(exp_fast(-INFINITY) == 0);
    CHECK(exp_fast(-200.0f) == 0);
    CHECK(exp_fast(INFINITY) == INFINITY);
    CHECK(exp_fast(100.0f) == INFINITY);
    CHECK(exp_fast(0.0f) == 1);
    CHECK(std::isnan(exp_fast(NAN)));
    CHECK(tanh_fast(0.0f) == 0);
    CHECK(tanh_fast(INFINITY) == 1);
    CHECK(tanh_fast(-INFINITY) == -1);
    CHECK(tanh_fast(20.0f) == 1);
    CHECK(std::isnan(tanh_fast(NAN)));
    CHECK(sigmoid_fast(-INFINITY) == 0);
    CHECK(sigmoid_fast(INFINITY) == 1);
    CHECK(std::isnan(sigmoid_fast(NAN)));
}

namespace {

struct VectorLoops {
    const char* name;
    bool available;
    void (*exp)(const float*, float*, int64_t);
    void (*tanh)(const float*, float*, int64_t);
    void (*sigmoid)(const float*, float*, int64_t);
};

std::vector<VectorLoops> vector_loops() {
    return {{"avx2", fast_math_avx2_available(), exp_avx2, tanh_avx2, sigmoid_avx2},
            {"avx512", fast_math_avx512_available(), exp_avx512, tanh_avx512, sigmoid_avx512}};
}

}  // namespace

TEST_CASE("fast_math: the vector loops agree with std and handle any length") {
    std::vector<float> xs = sweep(-110, 100);
    // the edges of exp's range, where the scalar version clamps
    for (float x : {88.72284f, 88.7229f, 88.73f, 88.8f, -103.99f, -104.0f, -104.01f, -87.3f, -87.4f})
        xs.push_back(x);
    xs.push_back(INFINITY), xs.push_back(-INFINITY), xs.push_back(NAN);
    const auto n = static_cast<int64_t>(xs.size());
    for (const VectorLoops& loops : vector_loops()) {
        if (!loops.available) continue;
        CAPTURE(loops.name);
        std::vector<float> e(xs.size()), t(xs.size()), s(xs.size());
        loops.exp(xs.data(), e.data(), n);
        loops.tanh(xs.data(), t.data(), n);
        loops.sigmoid(xs.data(), s.data(), n);
        double we = 0, wt = 0, ws = 0;
        for (int64_t i = 0; i + 3 < n; ++i) {
            const float x = xs[static_cast<size_t>(i)];
            const auto k = static_cast<size_t>(i);
            if (ref_exp(x) >= 1.2e-38 || ref_exp(x) == 0) we = std::max(we, ulp_error(e[k], ref_exp(x)));
            wt = std::max(wt, ulp_error(t[k], ref_tanh(x)));
            if (ref_sigmoid(x) >= 1.2e-38) ws = std::max(ws, ulp_error(s[k], ref_sigmoid(x)));
            // the same range decisions as the scalar version: 0 and +∞ where it gives them
            if (exp_fast(x) == 0 || std::isinf(exp_fast(x))) CHECK(e[k] == exp_fast(x));
        }
        CHECK(we <= 2);
        CHECK(wt <= 3);
        CHECK(ws <= 4);
        CHECK(e[static_cast<size_t>(n - 3)] == INFINITY);
        CHECK(e[static_cast<size_t>(n - 2)] == 0);
        CHECK(t[static_cast<size_t>(n - 3)] == 1);
        CHECK(t[static_cast<size_t>(n - 2)] == -1);
        CHECK(s[static_cast<size_t>(n - 3)] == 1);
        CHECK(s[static_cast<size_t>(n - 2)] == 0);
        CHECK(std::isnan(e[static_cast<size_t>(n - 1)]));
        CHECK(std::isnan(t[static_cast<size_t>(n - 1)]));
        CHECK(std::isnan(s[static_cast<size_t>(n - 1)]));
        // every tail length 0..33 gives the same values as the full run, and
        // writes nothing past the end
        for (int64_t len = 0; len < 34; ++len) {
            std::vector<float> part(static_cast<size_t>(len) + 1, -7.0f);
            loops.tanh(xs.data(), part.data(), len);
            for (int64_t i = 0; i < len; ++i) CHECK(part[static_cast<size_t>(i)] == t[static_cast<size_t>(i)]);
            CHECK(part[static_cast<size_t>(len)] == -7.0f);
        }
    }
}

TEST_CASE("fast_math: the *_into loops use the fast functions") {
    const std::vector<float> xs = {-3.5f, -0.1f, 0.0f, 0.3f, 1.0f, 9.0f, 50.0f};
    std::vector<real> in(xs.begin(), xs.end()), out(xs.size());
    tanh_into(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < xs.size(); ++i) CHECK(ulp_error(static_cast<float>(out[i]), ref_tanh(xs[i])) <= 3);
    exp_into(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < xs.size(); ++i) CHECK(ulp_error(static_cast<float>(out[i]), ref_exp(xs[i])) <= 2);
    sigmoid_into(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < xs.size(); ++i) CHECK(ulp_error(static_cast<float>(out[i]), ref_sigmoid(xs[i])) <= 3);
}
