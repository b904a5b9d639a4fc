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

double ref_exp(float x) { return std::exp(static_cast<double>(x)); }
double ref_tanh(float x) { return std::tanh(static_cast<double>(x)); }
double ref_sigmoid(float x) { return 1 / (1 + std::exp(-static_cast<double>(x))); }

// Every 97th float in [−110, 100] (about 10 million values), handed to `check`
// a block of 65,536 at a time, with the standard library's values in double.
// (Blocks, not one vector of the whole sweep: on a VM where a page fault costs
// microseconds, the whole sweep's vectors took longer to fault in than the
// test took to run.)
struct Block {
    std::vector<float> xs;
    std::vector<double> exp, tanh, sigmoid;
};

template <class Check>
void for_each_block_of_the_sweep(Check check) {
    Block b;
    const auto flush = [&] {
        b.exp.clear(), b.tanh.clear(), b.sigmoid.clear();
        for (float x : b.xs) {
            b.exp.push_back(ref_exp(x));
            b.tanh.push_back(ref_tanh(x));
            b.sigmoid.push_back(ref_sigmoid(x));
        }
        check(static_cast<const Block&>(b));
        b.xs.clear();
    };
    for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 97) {
        const auto u = static_cast<uint32_t>(bits);
        float x;
        std::memcpy(&x, &u, sizeof x);
        if (x >= -110 && x <= 100) b.xs.push_back(x);
        if (b.xs.size() == 65536) flush();
    }
    // the edges of exp's range, where the scalar version clamps
    for (float x : {88.72284f, 88.7229f, 88.73f, 88.8f, -103.99f, -104.0f, -104.01f, -87.3f, -87.4f})
        b.xs.push_back(x);
    flush();
}

// The largest error of f(xs[i]) against want[i], counting only results above
// FLT_MIN (below it, denormal results may lose precision, as they do in glibc).
template <class F>
double max_ulp(const std::vector<float>& xs, F f, const std::vector<double>& want) {
    double worst = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        if (std::fabs(want[i]) < 1.2e-38 && want[i] != 0) continue;
        worst = std::max(worst, ulp_error(f(xs[i]), want[i]));
    }
    return worst;
}

}  // namespace

TEST_CASE("fast_math: exp, tanh and sigmoid within a few ulp of std") {
    double we = 0, wt = 0, ws = 0;
    int64_t count = 0;
    for_each_block_of_the_sweep([&](const Block& b) {
        we = std::max(we, max_ulp(b.xs, exp_fast, b.exp));
        wt = std::max(wt, max_ulp(b.xs, tanh_fast, b.tanh));
        ws = std::max(ws, max_ulp(b.xs, sigmoid_fast, b.sigmoid));
        count += static_cast<int64_t>(b.xs.size());
    });
    CHECK(count > 10'000'000);
    CHECK(we <= 2);
    CHECK(wt <= 3);
    CHECK(ws <= 4);
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
    for (const VectorLoops& loops : vector_loops()) {
        if (!loops.available) continue;
        CAPTURE(loops.name);
        double we = 0, wt = 0, ws = 0;
        int64_t clamped = 0;  // values where the scalar exp_fast gives 0 or +∞
        std::vector<float> e, t, s;
        for_each_block_of_the_sweep([&](const Block& b) {
            const auto n = static_cast<int64_t>(b.xs.size());
            e.resize(b.xs.size()), t.resize(b.xs.size()), s.resize(b.xs.size());
            loops.exp(b.xs.data(), e.data(), n);
            loops.tanh(b.xs.data(), t.data(), n);
            loops.sigmoid(b.xs.data(), s.data(), n);
            for (size_t k = 0; k < b.xs.size(); ++k) {
                if (b.exp[k] >= 1.2e-38 || b.exp[k] == 0) we = std::max(we, ulp_error(e[k], b.exp[k]));
                wt = std::max(wt, ulp_error(t[k], b.tanh[k]));
                if (b.sigmoid[k] >= 1.2e-38) ws = std::max(ws, ulp_error(s[k], b.sigmoid[k]));
                // the same range decisions as the scalar version: 0 and +∞ where it gives them
                const float scalar = exp_fast(b.xs[k]);
                if (scalar == 0 || std::isinf(scalar)) {
                    CHECK(e[k] == scalar);
                    ++clamped;
                }
            }
        });
        CHECK(clamped > 0);
        CHECK(we <= 2);
        CHECK(wt <= 3);
        CHECK(ws <= 4);
        // +∞, −∞ and NaN
        const std::vector<float> special = {INFINITY, -INFINITY, NAN};
        e.resize(3), t.resize(3), s.resize(3);
        loops.exp(special.data(), e.data(), 3);
        loops.tanh(special.data(), t.data(), 3);
        loops.sigmoid(special.data(), s.data(), 3);
        CHECK(e[0] == INFINITY);
        CHECK(e[1] == 0);
        CHECK(t[0] == 1);
        CHECK(t[1] == -1);
        CHECK(s[0] == 1);
        CHECK(s[1] == 0);
        CHECK(std::isnan(e[2]));
        CHECK(std::isnan(t[2]));
        CHECK(std::isnan(s[2]));
        // every length 0..33 gives the same values as one long run, and
        // writes nothing past the end
        std::vector<float> xs(34), whole(34);
        for (size_t i = 0; i < xs.size(); ++i) xs[i] = -9.0f + 0.53f * static_cast<float>(i);
        loops.tanh(xs.data(), whole.data(), 34);
        for (int64_t len = 0; len < 34; ++len) {
            std::vector<float> part(static_cast<size_t>(len) + 1, -7.0f);
            loops.tanh(xs.data(), part.data(), len);
            for (int64_t i = 0; i < len; ++i) CHECK(part[static_cast<size_t>(i)] == whole[static_cast<size_t>(i)]);
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
