// Tests of tensor/ops_elementwise.cpp: hand-computed values on tiny inputs,
// NumPy broadcasting against a naive index-by-index reference, the stable
// forms of sigmoid and softplus, the in-place ops, and the error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

namespace {

// Every element of t is within tol of expected (and the counts agree).
void check_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
    REQUIRE(t.numel() == static_cast<int64_t>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
        INFO("element " << i << " of " << t.str());
        const double v = t[static_cast<int64_t>(i)];
        if (std::isinf(expected[i]))
            CHECK(v == expected[i]);
        else
            CHECK(v == doctest::Approx(expected[i]).epsilon(tol).scale(1.0));
    }
}

// The element of `t` that broadcasting reads for flat index `flat` of `out`:
// the definition of broadcasting, one index at a time.
real broadcast_read(const Tensor& t, const Shape& out, int64_t flat) {
    int64_t offset = 0;
    for (int i = out.rank() - 1, j = t.rank() - 1; i >= 0; --i, --j) {
        const int64_t idx = flat % out[i];
        flat /= out[i];
        if (j >= 0 && t.shape()[j] != 1) offset += idx * t.shape().stride(j);
    }
    return t[offset];
}

// add(a, b) == the naive broadcast loop, exactly.
void check_add_broadcast(const Shape& sa, const Shape& sb, const Shape& expected) {
    Generator gen(11);
    Tensor a = Tensor::normal(sa, 0, 1, gen), b = Tensor::normal(sb, 0, 1, gen);
    Tensor c = add(a, b);
    REQUIRE(c.shape() == expected);
    for (int64_t i = 0; i < c.numel(); ++i) {
        INFO("shapes " << sa.str() << " + " << sb.str() << ", element " << i);
        REQUIRE(c[i] == broadcast_read(a, expected, i) + broadcast_read(b, expected, i));
    }
}

const Tensor m23 = Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3});

}  // namespace

TEST_CASE("elementwise: simple unary ops") {
    const Tensor x = Tensor::from({-2, 0, 0.5, 3});
    check_values(neg(x), {2, 0, -0.5, -3});
    check_values(abs(x), {2, 0, 0.5, 3});
    check_values(sign(x), {-1, 0, 1, 1});
    check_values(square(x), {4, 0, 0.25, 9});
    check_values(relu(x), {0, 0, 0.5, 3});
    check_values(leaky_relu(x, 0.1f), {-0.2, 0, 0.5, 3});
    check_values(clamp(x, -1, 1), {-1, 0, 0.5, 1});
    check_values(pow(x, real(3)), {-8, 0, 0.125, 27});
    check_values(pow(x, real(2)), {4, 0, 0.25, 9});
    check_values(tanh(x), {std::tanh(-2.0), 0, std::tanh(0.5), std::tanh(3.0)});
    const Tensor p = Tensor::from({1, 4, 0.25});
    check_values(sqrt(p), {1, 2, 0.5});
    check_values(exp(Tensor::from({0, 1, -1})), {1, std::exp(1.0), std::exp(-1.0)});
    check_values(log(Tensor::from({1, static_cast<real>(std::exp(2.0))})), {0, 2});
    // Shapes are kept, and the result is a new tensor.
    Tensor n = neg(m23);
    CHECK(n.shape() == Shape{2, 3});
    CHECK_FALSE(n.shares_storage_with(m23));
    CHECK(neg(Tensor::scalar(2)).shape() == Shape{});
    CHECK_THROWS_WITH_AS(clamp(x, 1, -1), "clamp: lower bound 1 is above upper bound -1",
                         std::invalid_argument);
}

TEST_CASE("elementwise: sigmoid, softplus and gelu are exact and stable") {
    const Tensor x = Tensor::from({-1000, -100, -1, 0, 1, 100, 1000});
    const Tensor s = sigmoid(x);
    check_values(s, {0, 0, 1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-1.0)), 1, 1});
    for (int64_t i = 0; i < s.numel(); ++i) CHECK(std::isfinite(s[i]));
    CHECK(s[1] >= 0);  // e^-100 underflows towards 0, never below

    const Tensor sp = softplus(x);
    check_values(sp, {0, 0, std::log1p(std::exp(-1.0)), std::log(2.0), 1 + std::log1p(std::exp(-1.0)), 100, 1000});
    for (int64_t i = 0; i < sp.numel(); ++i) CHECK(std::isfinite(sp[i]));

    // GELU(x) = x·Φ(x): Φ(1) = 0.841344746068543, Φ(-1) = 0.158655253931457.
    check_values(gelu(Tensor::from({-1, 0, 1, 2})), {-0.158655253931457, 0, 0.841344746068543, 2 * 0.977249868051821});
}

TEST_CASE("elementwise: binary ops on equal shapes") {
    const Tensor a = Tensor::from({1, -2, 3, 4}), b = Tensor::from({2, 2, -3, 0.5});
    check_values(add(a, b), {3, 0, 0, 4.5});
    check_values(sub(a, b), {-1, -4, 6, 3.5});
    check_values(mul(a, b), {2, -4, -9, 2});
    check_values(div(a, b), {0.5, -1, -1, 8});
    check_values(pow(Tensor::from({2, 9, 4}), Tensor::from({3, 0.5, -1})), {8, 3, 0.25});
    check_values(minimum(a, b), {1, -2, -3, 0.5});
    check_values(maximum(a, b), {2, 2, 3, 4});
    const Tensor c = Tensor::from({1, 2, 3}), d = Tensor::from({2, 2, 2});
    check_values(eq(c, d), {0, 1, 0});
    check_values(gt(c, d), {0, 0, 1});
    check_values(ge(c, d), {0, 1, 1});
    check_values(lt(c, d), {1, 0, 0});
    check_values(le(c, d), {1, 1, 0});
    // Scalars and operators.
    check_values(add(c, real(10)), {11, 12, 13});
    check_values(mul(c, real(-2)), {-2, -4, -6});
    check_values(c + d, {3, 4, 5});
    check_values(c - d, {-1, 0, 1});
    check_values(c * d, {2, 4, 6});
    check_values(c / d, {0.5, 1, 1.5});
    check_values(-c, {-1, -2, -3});
    check_values(c + real(1), {2, 3, 4});
    check_values(c * real(3), {3, 6, 9});
    check_values(real(3) * c, {3, 6, 9});
}

TEST_CASE("elementwise: broadcasting by hand") {
    // A row vector along the last axis (the bias case).
    const Tensor row = Tensor::from({10, 20, 30});
    check_values(add(m23, row), {11, 22, 33, 14, 25, 36});
    // A column (size-1 last axis).
    const Tensor col = Tensor::from({100, 200}, Shape{2, 1});
    check_values(add(m23, col), {101, 102, 103, 204, 205, 206});
    // Outer product shape: 2×1 and 1×3 give 2×3.
    Tensor outer = mul(col, Tensor::from({1, 2, 3}, Shape{1, 3}));
    CHECK(outer.shape() == Shape{2, 3});
    check_values(outer, {100, 200, 300, 200, 400, 600});
    // Rank 0 on either side, and a one-element vector of a lower rank.
    check_values(sub(Tensor::scalar(1), m23), {0, -1, -2, -3, -4, -5});
    check_values(div(m23, Tensor::scalar(2)), {0.5, 1, 1.5, 2, 2.5, 3});
    check_values(sub(m23, Tensor::from({1})), {0, 1, 2, 3, 4, 5});
    CHECK(add(Tensor::scalar(1), Tensor::scalar(2)).shape() == Shape{});
    CHECK(add(Tensor::scalar(1), Tensor::from({2}, Shape{1, 1})).shape() == Shape{1, 1});
    // Empty tensors broadcast too.
    CHECK(add(Tensor::zeros(Shape{0, 3}), row).shape() == Shape{0, 3});
}

TEST_CASE("elementwise: broadcasting agrees with the naive definition") {
    check_add_broadcast(Shape{4, 1, 3}, Shape{5, 1}, Shape{4, 5, 3});
    check_add_broadcast(Shape{2, 3, 4}, Shape{4}, Shape{2, 3, 4});     // a trailing block
    check_add_broadcast(Shape{1, 1, 4}, Shape{2, 3, 4}, Shape{2, 3, 4});  // … on the left
    check_add_broadcast(Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 3, 4});
    check_add_broadcast(Shape{2, 3, 4}, Shape{1, 3, 1}, Shape{2, 3, 4});  // not a block
    check_add_broadcast(Shape{2, 3, 4}, Shape{3, 1}, Shape{2, 3, 4});
    check_add_broadcast(Shape{1, 3, 1}, Shape{2, 1, 4}, Shape{2, 3, 4});
    check_add_broadcast(Shape{2, 1, 1, 5}, Shape{3, 1, 5}, Shape{2, 3, 1, 5});
    check_add_broadcast(Shape{}, Shape{2, 3}, Shape{2, 3});
    check_add_broadcast(Shape{1, 1}, Shape{3}, Shape{1, 3});
    // Large enough for the thread pool (above 32k elements), with both
    // merged-axis layouts, on 1 and 2 threads.
    const int saved = num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        check_add_broadcast(Shape{64, 128, 9}, Shape{128, 1}, Shape{64, 128, 9});
        check_add_broadcast(Shape{50000}, Shape{50000}, Shape{50000});
        check_add_broadcast(Shape{300, 1, 200}, Shape{1, 2, 1}, Shape{300, 2, 200});
    }
    set_num_threads(saved);
}

TEST_CASE("elementwise: where and masked_fill broadcast") {
    const Tensor cond = Tensor::from({1, 0}, Shape{2, 1});
    Tensor w = where(cond, Tensor::from({1, 2, 3}, Shape{1, 3}), Tensor::scalar(-1));
    CHECK(w.shape() == Shape{2, 3});
    check_values(w, {1, 2, 3, -1, -1, -1});
    check_values(where(Tensor::from({0, 2, -1}), Tensor::from({1, 2, 3}), Tensor::from({7, 8, 9})), {7, 2, 3});

    const Tensor mask = Tensor::from({0, 1, 0}, Shape{1, 3});
    const real ninf = -std::numeric_limits<real>::infinity();
    Tensor f = masked_fill(m23, mask, ninf);
    check_values(f, {1, ninf, 3, 4, ninf, 6});
    CHECK(m23[1] == 2);  // the input is untouched
    CHECK_THROWS_WITH_AS(masked_fill(m23, Tensor::zeros(Shape{3, 3}), 0),
                         "masked_fill: shape 3×3 does not broadcast to 2×3", std::invalid_argument);
    CHECK_THROWS_AS(where(Tensor::zeros(Shape{2}), m23, m23), std::invalid_argument);
}

TEST_CASE("elementwise: in-place ops change the destination and its views") {
    Tensor a = m23.clone();
    Tensor view = a.reshape(Shape{6});
    add_(a, Tensor::from({1, 2, 3}));
    check_values(a, {2, 4, 6, 5, 7, 9});
    CHECK(view[5] == 9);  // shares storage with a
    add_(a, Tensor::scalar(1));
    check_values(a, {3, 5, 7, 6, 8, 10});
    axpy_(a, 2, Tensor::ones(Shape{2, 3}));
    check_values(a, {5, 7, 9, 8, 10, 12});
    mul_(a, real(0.5));
    check_values(a, {2.5, 3.5, 4.5, 4, 5, 6});
    CHECK(m23[0] == 1);  // a was a clone

    CHECK_THROWS_WITH_AS(add_(a, Tensor::zeros(Shape{4, 3})), "add_: shape 4×3 does not broadcast to 2×3",
                         std::invalid_argument);
    // add_ can never grow its destination, even when the shapes broadcast.
    Tensor small = Tensor::zeros(Shape{3});
    CHECK_THROWS_AS(add_(small, m23), std::invalid_argument);
    CHECK_THROWS_WITH_AS(axpy_(a, 1, Tensor::zeros(Shape{3})),
                         "axpy_: shapes 2×3 and 3 differ (axpy_ needs equal shapes)", std::invalid_argument);
}

TEST_CASE("elementwise: shape errors name the op and the shapes") {
    const Tensor b = Tensor::zeros(Shape{4, 3});
    CHECK_THROWS_WITH_AS(add(m23, b), "add: shapes 2×3 and 4×3 do not broadcast (axis 0: 2 vs 4)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mul(Tensor::zeros(Shape{2}), Tensor::zeros(Shape{3})),
                         "mul: shapes 2 and 3 do not broadcast (axis 0: 2 vs 3)", std::invalid_argument);
    CHECK_THROWS_AS(m23 - b, std::invalid_argument);
    CHECK_THROWS_AS(lt(m23, b), std::invalid_argument);
    CHECK_THROWS_WITH_AS(exp(Tensor()), "exp: the input tensor is undefined", std::invalid_argument);
}
