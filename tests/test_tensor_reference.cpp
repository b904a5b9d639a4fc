// The element-wise and reduction ops against their plain loops
// (tensor/reference.hpp): every case of the library's versions (same shapes,
// a scalar either side, a trailing block such as a bias either side, the
// planned broadcast; the reductions' contiguous, row-block and column paths),
// on one thread and on two, at sizes that split over the threads. The plain
// loops themselves are checked by hand first.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/reference.hpp"

using namespace attn;

namespace {

// How many elements of got differ from want by more than tol·(1 + |want|)
// (tol 0: bit for bit), and the first of them, for the message.
std::pair<int64_t, std::string> differences(const Tensor& got, const Tensor& want, double tol) {
    if (got.shape() != want.shape()) return {1, "shape " + got.shape().str() + " against " + want.shape().str()};
    int64_t bad = 0;
    std::string first;
    for (int64_t i = 0; i < got.numel(); ++i) {
        const double g = got[i], w = want[i];
        const bool same = tol == 0 ? (g == w || (std::isnan(g) && std::isnan(w)))
                                   : std::abs(g - w) <= tol * (1 + std::abs(w));
        if (!same && bad++ == 0)
            first = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
    }
    return {bad, first};
}

#define CHECK_MATCHES(got, want, tol)                                    \
    do {                                                                 \
        const auto result_ = differences((got), (want), (tol));         \
        const int64_t bad_ = result_.first;                             \
        const std::string first_ = result_.second;                      \
        INFO(first_);                                                    \
        CHECK(bad_ == 0);                                                \
    } while (0)

// The shapes of every case of zip_into, each large enough to split over two
// threads where the case splits.
const std::vector<std::pair<Shape, Shape>> kPairs = {
    {{300, 257}, {300, 257}},          // 1. the same shapes
    {{300, 257}, {1}},                 // 2. tensor ∘ scalar
    {{1}, {300, 257}},                 //    scalar ∘ tensor
    {{64, 30, 33}, {30, 33}},          // 3. a trailing block (a bias)
    {{1, 33}, {64, 30, 33}},           //    the block first, with a leading 1
    {{40, 1, 70}, {1, 50, 70}},        // 4. the planned broadcast: rows of both
    {{40, 50, 1}, {40, 1, 70}},        //    a column against a row
    {{3, 1, 5, 1}, {1, 4, 1, 6}},      //    every axis broadcast one way or the other
    {{2, 3, 1}, {2, 1, 1}},            //    a scalar per batch
    {{7, 1}, {7, 1}},                  //    trailing ones
};

}  // namespace

TEST_CASE("reference loops: broadcasting and the reductions by hand") {
    // a 2×1 + b 1×3 = [[a0 + b0, a0 + b1, a0 + b2], [a1 + b0, …]]
    const Tensor a = Tensor::from({1, 2}, {2, 1}), b = Tensor::from({10, 20, 30}, {1, 3});
    const Tensor s = reference::binary(a, b, [](real x, real y) { return x + y; });
    CHECK(s.shape() == Shape{2, 3});
    const real want[] = {11, 21, 31, 12, 22, 32};
    for (int i = 0; i < 6; ++i) CHECK(s[i] == want[i]);
    // [[1, 2, 3], [4, 5, 6]]: sums 5 7 9 down, 6 15 across; maxima 4 5 6 and 3 6
    const Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor down = reference::sum(x, 0), across = reference::sum(x, 1, /*keepdim=*/true);
    CHECK(down.shape() == Shape{3});
    CHECK(across.shape() == Shape{2, 1});
    CHECK((down[0] == 5 && down[1] == 7 && down[2] == 9));
    CHECK((across[0] == 6 && across[1] == 15));
    const Tensor m = reference::max(x, 0);
    CHECK((m[0] == 4 && m[1] == 5 && m[2] == 6));
    // softmax of (0, ln 3) is (1/4, 3/4); a row of −∞ only gives zeros
    const real inf = std::numeric_limits<real>::infinity();
    const Tensor p = reference::softmax(Tensor::from({0, std::log(real(3)), -inf, -inf}, {2, 2}), 1);
    CHECK(p[0] == doctest::Approx(0.25));
    CHECK(p[1] == doctest::Approx(0.75));
    CHECK((p[2] == 0 && p[3] == 0));
}

TEST_CASE("element-wise ops: every broadcast case equals the plain loop, bit for bit, on 1 and 2 threads") {
    using Op = Tensor (*)(const Tensor&, const Tensor&);
    const std::vector<std::tuple<const char*, Op, real (*)(real, real)>> ops = {
        {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }, [](real x, real y) { return x + y; }},
        {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); }, [](real x, real y) { return x - y; }},
        {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }, [](real x, real y) { return x * y; }},
        {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }, [](real x, real y) { return x / y; }},
        {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); },
         [](real x, real y) { return std::isnan(x) || x > y ? x : y; }},
    };
    const int saved = num_threads();
    Generator gen(17);
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const auto& [sa, sb] : kPairs) {
            const Tensor a = Tensor::normal(sa, 0, 1, gen), b = Tensor::uniform(sb, 0.5, 2, gen);
            for (const auto& [name, op, f] : ops) {
                const std::string what = std::string(name) + " " + sa.str() + " with " + sb.str() + ", " +
                                         std::to_string(threads) + " threads";
                INFO(what);
                CHECK_MATCHES(op(a, b), reference::binary(a, b, f), 0);
            }
            // in place: a += b where b broadcasts to a
            if (broadcast_shapes(sa, sb, "test") == sa) {
                Tensor c = a.clone();
                add_(c, b);
                const std::string what = "add_ " + sa.str() + " with " + sb.str() + ", " + std::to_string(threads) +
                                         " threads";
                INFO(what);
                CHECK_MATCHES(c, reference::binary(a, b, [](real x, real y) { return x + y; }), 0);
            }
        }
    }
    set_num_threads(saved);
}

TEST_CASE("element-wise ops of one input equal the plain loop (the vector exp and tanh within 4e-7)") {
    Generator gen(18);
    const Tensor a = Tensor::normal({300, 257}, 0, 3, gen);
    const int saved = num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        INFO(threads << " threads");
        CHECK_MATCHES(relu(a), reference::unary(a, [](real x) { return x > 0 ? x : real(0); }), 0);
        CHECK_MATCHES(neg(a), reference::unary(a, [](real x) { return -x; }), 0);
        CHECK_MATCHES(abs(a), reference::unary(a, [](real x) { return std::abs(x); }), 0);
        CHECK_MATCHES(exp(a), reference::unary(a, [](real x) { return std::exp(x); }), 4e-7);
        CHECK_MATCHES(tanh(a), reference::unary(a, [](real x) { return std::tanh(x); }), 4e-7);
        CHECK_MATCHES(sigmoid(a), reference::unary(a, [](real x) { return 1 / (1 + std::exp(-x)); }), 4e-7);
    }
    set_num_threads(saved);
}

TEST_CASE("reductions along each axis equal the plain loops: contiguous rows, blocks of rows, columns") {
    // {6, 5000, 3}: the middle axis is many short rows (blocks of rows); {2, 3, 50000}: the last axis is
    // long contiguous runs; {4000, 70}: down the first axis, many rows of 70 columns; {3, 40}: few rows.
    const int saved = num_threads();
    Generator gen(19);
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Shape& s : {Shape{6, 5000, 3}, Shape{2, 3, 50000}, Shape{4000, 70}, Shape{3, 40}, Shape{1, 1}}) {
            const Tensor a = Tensor::normal(s, 0, 1, gen);
            for (int axis = 0; axis < s.rank(); ++axis)
                for (bool keepdim : {false, true}) {
                    const std::string what = s.str() + " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "") +
                                             ", " + std::to_string(threads) + " threads";
                    INFO(what);
                    // The reference adds in double; the library's blocks of rows add in float, in
                    // another order: each total within 4·√n·2⁻²⁴·Σ|x| of the reference's (a
                    // typical float rounding; a row left out or counted twice is ~1 off).
                    const Tensor got = sum(a, axis, keepdim), want = reference::sum(a, axis, keepdim);
                    const Tensor scale = reference::sum(abs(a), axis, keepdim);
                    const double n = static_cast<double>(s[axis]);
                    int64_t far = 0;
                    for (int64_t i = 0; i < want.numel(); ++i)
                        far += !(std::abs(got[i] - want[i]) <= 4 * std::sqrt(n) * 0x1p-24 * scale[i]);
                    CHECK(got.shape() == want.shape());
                    CHECK(far == 0);
                    CHECK_MATCHES(max(a, axis, keepdim), reference::max(a, axis, keepdim), 0);
                }
            for (int axis = 0; axis < s.rank(); ++axis) {
                const std::string what = "softmax " + s.str() + " axis " + std::to_string(axis) + ", " +
                                         std::to_string(threads) + " threads";
                INFO(what);
                CHECK_MATCHES(softmax(a, axis), reference::softmax(a, axis), 1e-6);
            }
        }
    }
    set_num_threads(saved);
}
