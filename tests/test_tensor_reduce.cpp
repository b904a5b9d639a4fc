// Tests of tensor/ops_reduce.cpp: reductions along one axis (with keepdim and
// negative axes), several axes, everything, sum_to; logsumexp and the softmax
// family, including the fully masked (all -inf) row.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/row_blocks.hpp"

using namespace attn;

namespace {

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

// sum of a 3-D tensor over axis `axis`, by three plain loops.
std::vector<double> naive_sum3(const Tensor& a, int axis) {
    const Shape& s = a.shape();
    Shape out = s.with(axis, 1);
    std::vector<double> r(static_cast<size_t>(out.numel()), 0.0);
    for (int64_t i = 0; i < s[0]; ++i)
        for (int64_t j = 0; j < s[1]; ++j)
            for (int64_t k = 0; k < s[2]; ++k) {
                int64_t o[3] = {i, j, k};
                o[axis] = 0;
                r[static_cast<size_t>((o[0] * out[1] + o[1]) * out[2] + o[2])] += a.at({i, j, k});
            }
    return r;
}

const Tensor m23 = Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3});
const real kInf = std::numeric_limits<real>::infinity();

}  // namespace

TEST_CASE("reduce: sum, mean, max, min along an axis, keepdim and negative axes") {
    check_values(sum(m23, 0), {5, 7, 9});
    check_values(sum(m23, 1), {6, 15});
    check_values(sum(m23, -1), {6, 15});
    CHECK(sum(m23, 0).shape() == Shape{3});
    CHECK(sum(m23, 0, true).shape() == Shape{1, 3});
    CHECK(sum(m23, -1, true).shape() == Shape{2, 1});
    check_values(mean(m23, 0), {2.5, 3.5, 4.5});
    check_values(mean(m23, 1, true), {2, 5});
    const Tensor x = Tensor::from({3, -1, 7, 7, 0, -5}, Shape{2, 3});
    check_values(max(x, 1), {7, 7});
    check_values(max(x, 0), {7, 0, 7});
    check_values(min(x, 1), {-1, -5});
    check_values(min(x, -2), {3, -1, -5});
    // argmax/argmin give the first extreme on ties.
    check_values(argmax(x, 1), {2, 0});
    check_values(argmax(x, 0), {1, 1, 0});
    check_values(argmin(x, 1), {1, 2});
    CHECK(argmax(x, 1, true).shape() == Shape{2, 1});
    CHECK(argmax(Tensor::from({2, 2, 2}), 0).shape() == Shape{});  // rank 1 → rank 0
    check_values(argmax(Tensor::from({2, 2, 2}), 0), {0});
    // A middle axis (strided slices): 2×3×2 summed over axis 1.
    const Tensor c = Tensor::arange(12).reshape(Shape{2, 3, 2});
    check_values(sum(c, 1), {0 + 2 + 4, 1 + 3 + 5, 6 + 8 + 10, 7 + 9 + 11});
    check_values(max(c, 1), {4, 5, 10, 11});
    check_values(argmin(c, -2, true), {0, 0, 0, 0});
    CHECK(argmin(c, -2, true).shape() == Shape{2, 1, 2});
    // A NaN is never hidden by max.
    const real nan = std::numeric_limits<real>::quiet_NaN();
    CHECK(std::isnan(max(Tensor::from({1, nan, 3}), 0).item()));
}

TEST_CASE("reduce: sums over each axis of a 3-D tensor match plain loops") {
    Generator gen(3);
    const int saved = num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Shape& s : {Shape{2, 3, 4}, Shape{1, 5, 1}, Shape{70, 30, 20}, Shape{3, 40000, 1}}) {
            const Tensor a = Tensor::normal(s, 0, 1, gen);
            for (int axis = 0; axis < 3; ++axis) {
                INFO("shape " << s.str() << " axis " << axis << " threads " << threads);
                check_values(sum(a, axis), naive_sum3(a, axis), 1e-4);
            }
        }
    }
    set_num_threads(saved);
}

TEST_CASE("reduce: several axes, everything, and empty axes") {
    const Tensor c = Tensor::arange(24).reshape(Shape{2, 3, 4});
    Tensor s02 = sum(c, {0, 2});
    CHECK(s02.shape() == Shape{3});
    // Σ over i, k of 12i + 4j + k = 8·4j + (0+12)·4 + 2·(0+1+2+3).
    check_values(s02, {60, 92, 124});
    CHECK(sum(c, {-1, 0}, true).shape() == Shape{1, 3, 1});
    check_values(sum(c, {0, 1}), {60, 66, 72, 78});
    check_values(sum(c, {0, 1, 2}), {276});
    CHECK(sum(c, {0, 1, 2}).shape() == Shape{});
    CHECK(sum(c, std::vector<int>{}).shape() == Shape{2, 3, 4});
    CHECK_THROWS_WITH_AS(sum(c, {1, -2}), "sum: axis -2 appears twice in the axes for shape 2×3×4",
                         std::invalid_argument);

    Tensor total = sum(m23);
    CHECK(total.shape() == Shape{});
    CHECK(total.item() == 21);
    CHECK(mean(m23).item() == doctest::Approx(3.5));
    CHECK(max(m23).item() == 6);
    CHECK(min(m23).item() == 1);
    CHECK(max(m23).shape() == Shape{});

    const Tensor empty = Tensor::zeros(Shape{2, 0});
    check_values(sum(empty, 1), {0, 0});
    CHECK(sum(empty).item() == 0);
    CHECK(logsumexp(empty, 1)[0] == -kInf);
    CHECK_THROWS_WITH_AS(max(empty, 1), "max: cannot reduce over axis 1 of shape 2×0, which is empty",
                         std::invalid_argument);
    CHECK_THROWS_AS(mean(empty, 1), std::invalid_argument);
    CHECK_THROWS_AS(argmin(empty, -1), std::invalid_argument);
    CHECK_THROWS_AS(mean(empty), std::invalid_argument);
    CHECK_THROWS_WITH_AS(sum(m23, 2), "sum: axis 2 is out of range for shape 2×3", std::out_of_range);
    CHECK_THROWS_AS(softmax(m23, -3), std::out_of_range);
}

TEST_CASE("reduce: sum of everything is exact and the same on any number of threads") {
    const int saved = num_threads();
    Generator gen(5);
    const Tensor a = Tensor::uniform(Shape{100003}, -1, 1, gen);
    set_num_threads(1);
    const real one = sum(a).item();
    set_num_threads(2);
    const real two = sum(a).item();
    set_num_threads(saved);
    CHECK(one == two);  // bit for bit
    double expected = 0;
    for (int64_t i = 0; i < a.numel(); ++i) expected += a[i];
    CHECK(one == doctest::Approx(expected).epsilon(1e-6));
    CHECK(sum(Tensor::ones(Shape{100003})).item() == 100003);
}

TEST_CASE("reduce: sums down many rows go in fixed blocks: the rule by a plain loop, the same bits on 1 and 2 threads") {
    // 1000 rows of 50: a block holds at least 16384 values and 64 rows, so
    // ⌈16384 / 50⌉ = 328 rows, and 1000 / 328 = 3 blocks: rows [0, 333),
    // [333, 666), [666, 1000), each summed down in order in float, then the
    // three sums added in order. Written out here as the expected bits; a
    // 2×1000×50 tensor summed over its middle axis takes the same blocks in
    // each of its two slabs. 40 rows of 50 (under two blocks' worth) are one
    // block, a plain sum down the rows.
    CHECK(row_blocks(1000, 50) == 3);
    CHECK(row_blocks(40, 50) == 1);
    CHECK(row_blocks(127, 8) == 1);  // 64 rows at least in a block
    CHECK(row_blocks(4096, 300) == 64);
    Generator gen(8);
    const Tensor a = Tensor::normal({2, 1000, 50}, 0, 1, gen);
    auto blocked = [&](int64_t slab, int64_t rows, const std::vector<int64_t>& bounds) {
        std::vector<float> total(50, 0.0f);
        for (size_t b = 0; b + 1 < bounds.size(); ++b)
            for (int64_t j = 0; j < 50; ++j) {
                float s = 0;
                for (int64_t r = bounds[b]; r < bounds[b + 1]; ++r) s += static_cast<float>(a[(slab * rows + r) * 50 + j]);
                total[static_cast<size_t>(j)] = b == 0 ? s : total[static_cast<size_t>(j)] + s;
            }
        return total;
    };
    const int saved = num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        CAPTURE(threads);
        const Tensor rows = a.reshape(Shape{2000, 50});
        const Tensor flat = sum(rows.rows(0, 1000), 0), middle = sum(a, 1), few = sum(rows.rows(0, 40), 0);
        const std::vector<float> want0 = blocked(0, 1000, {0, 333, 666, 1000}), want1 = blocked(1, 1000, {0, 333, 666, 1000});
        const std::vector<float> plain = blocked(0, 1000, {0, 40});
        for (int64_t j = 0; j < 50; ++j) {
            CAPTURE(j);
            if constexpr (std::is_same_v<real, float>) {  // the bits (the float build)
                CHECK(flat[j] == want0[static_cast<size_t>(j)]);
                CHECK(middle[j] == want0[static_cast<size_t>(j)]);
                CHECK(middle[50 + j] == want1[static_cast<size_t>(j)]);
                CHECK(few[j] == plain[static_cast<size_t>(j)]);
            }
            double exact = 0;  // and the value, in double
            for (int64_t r = 0; r < 1000; ++r) exact += a[r * 50 + j];
            CHECK(flat[j] == doctest::Approx(exact).epsilon(1e-5).scale(1.0));
        }
    }
    set_num_threads(saved);
}

TEST_CASE("reduce: sum_to undoes broadcasting") {
    check_values(sum_to(m23, Shape{3}), {5, 7, 9});
    check_values(sum_to(m23, Shape{1, 3}), {5, 7, 9});
    check_values(sum_to(m23, Shape{2, 1}), {6, 15});
    check_values(sum_to(m23, Shape{}), {21});
    CHECK(sum_to(m23, Shape{}).shape() == Shape{});
    CHECK(sum_to(m23, Shape{1, 1}).shape() == Shape{1, 1});
    // The bias gradient: B×n×d → d.
    const Tensor g = Tensor::arange(24).reshape(Shape{2, 3, 4});
    check_values(sum_to(g, Shape{4}), {60, 66, 72, 78});
    check_values(sum_to(g, Shape{3, 1}), {60, 92, 124});  // the same sums as sum(g, {0, 2})
    CHECK(sum_to(g, Shape{3, 1}).shape() == Shape{3, 1});
    // Nothing to sum: the same tensor comes back, storage shared.
    CHECK(sum_to(m23, Shape{2, 3}).shares_storage_with(m23));
    CHECK_THROWS_WITH_AS(sum_to(m23, Shape{4}), "sum_to: shape 4 does not broadcast to 2×3", std::invalid_argument);
    CHECK_THROWS_AS(sum_to(m23, Shape{1, 2, 3}), std::invalid_argument);
}

TEST_CASE("reduce: logsumexp is stable") {
    // log(e^1 + e^2 + e^3) = 3 + log(1 + e^-1 + e^-2).
    const double lse123 = 3 + std::log(1 + std::exp(-1.0) + std::exp(-2.0));
    check_values(logsumexp(Tensor::from({1, 2, 3}), 0), {lse123});
    check_values(logsumexp(Tensor::from({1000, 1000}), 0), {1000 + std::log(2.0)});  // e^1000 overflows
    check_values(logsumexp(Tensor::from({-1000, -1000}), 0), {-1000 + std::log(2.0)});
    const Tensor masked = Tensor::from({-kInf, -kInf, 0, -kInf}, Shape{2, 2});
    Tensor l = logsumexp(masked, 1, true);
    CHECK(l.shape() == Shape{2, 1});
    check_values(l, {-kInf, 0});
    check_values(logsumexp(m23, 0), {4 + std::log1p(std::exp(-3.0)), 5 + std::log1p(std::exp(-3.0)),
                                     6 + std::log1p(std::exp(-3.0))});
}

TEST_CASE("softmax: values, large inputs, masked entries and fully masked rows") {
    const Tensor x = Tensor::from({1, 2, 3, 1000, 1001, -kInf}, Shape{2, 3});
    Tensor s = softmax(x, 1);
    const double e1 = std::exp(-1.0), e2 = std::exp(-2.0), z = 1 + e1 + e2;
    check_values(s, {e2 / z, e1 / z, 1 / z, e1 / (1 + e1), 1 / (1 + e1), 0});
    check_values(sum(s, 1), {1, 1});

    // Every key masked: zeros, not NaN; the other rows are unaffected.
    const Tensor masked = Tensor::from({-kInf, -kInf, -kInf, 0, 0, -kInf}, Shape{2, 3});
    check_values(softmax(masked, -1), {0, 0, 0, 0.5, 0.5, 0});
    Tensor ls = log_softmax(masked, -1);
    check_values(ls, {-kInf, -kInf, -kInf, -std::log(2.0), -std::log(2.0), -kInf});
    for (int64_t i = 0; i < ls.numel(); ++i) CHECK_FALSE(std::isnan(ls[i]));

    // log_softmax = x - logsumexp, also where softmax underflows to 0.
    check_values(log_softmax(Tensor::from({0, -200}), 0), {0, -200}, 1e-6);
    check_values(log_softmax(x, 1), {-2 - std::log(z), -1 - std::log(z), -std::log(z), -1 - std::log1p(e1),
                                     -std::log1p(e1), -kInf});

    // Along a non-last axis, softmax is the transposed softmax.
    Generator gen(9);
    const Tensor r = Tensor::normal(Shape{4, 5, 3}, 0, 2, gen);
    CHECK(allclose(softmax(r, 1), transpose(softmax(transpose(r, 1, 2), 2), 1, 2), 1e-5, 1e-7));
    CHECK(allclose(log_softmax(r, 0), transpose(log_softmax(transpose(r, 0, 2), -1), 0, 2), 1e-5, 1e-6));
    check_values(sum(softmax(r, 0), 0), std::vector<double>(15, 1.0), 1e-5);
}

TEST_CASE("softmax on long rows: the eight-lane max and sum, their tails, and a NaN anywhere in the row") {
    // Rows of 1..37 values: every tail length after the lanes of 8, with the
    // largest value in each possible lane, against a plain one-at-a-time softmax.
    Generator gen(4);
    for (int64_t n = 1; n <= 37; ++n) {
        Tensor x = Tensor::normal(Shape{3, n}, 0, 3, gen);
        x[n - 1] = 50;  // row 0's maximum in its last position (a tail, or the last lane)
        const Tensor s = softmax(x, 1);
        for (int64_t r = 0; r < 3; ++r) {
            double m = -1e300, z = 0;
            for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(x[r * n + i]));
            for (int64_t i = 0; i < n; ++i) z += std::exp(x[r * n + i] - m);
            for (int64_t i = 0; i < n; ++i) CHECK(s[r * n + i] == doctest::Approx(std::exp(x[r * n + i] - m) / z).epsilon(1e-5));
        }
    }
    // A NaN is never hidden, in a lane or in the tail: its whole row is NaN.
    for (int64_t at : {0, 5, 8, 19, 20}) {
        Tensor x = Tensor::full(Shape{2, 21}, 1.0);
        x[at] = std::numeric_limits<real>::quiet_NaN();
        const Tensor s = softmax(x, -1);
        for (int64_t i = 0; i < 21; ++i) CHECK(std::isnan(s[i]));
        for (int64_t i = 21; i < 42; ++i) CHECK(s[i] == doctest::Approx(1.0 / 21));
    }
}

TEST_CASE("softmax_backward: z·(g − Σ g·z) along any axis, the composite's values; shapes must match") {
    Generator gen(12);
    for (int axis : {0, 1, 2}) {
        const Tensor x = Tensor::normal(Shape{3, 20, 6}, 0, 2, gen);
        const Tensor g = Tensor::normal(Shape{3, 20, 6}, 0, 1, gen);
        const Tensor z = softmax(x, axis);
        const Tensor composite = mul(z, sub(g, sum(mul(g, z), axis, true)));
        CHECK(allclose(softmax_backward(z, g, axis), composite, 1e-5, 1e-6));
    }
    // A masked position (z = 0) gets gradient 0, whatever g is there.
    const Tensor z = softmax(Tensor::from({0, 0, -kInf}, Shape{1, 3}), 1);
    const Tensor d = softmax_backward(z, Tensor::from({1, 2, 1e30}, Shape{1, 3}), 1);
    CHECK(d[2] == 0);
    CHECK(d[0] == doctest::Approx(0.5 * (1 - 1.5)));
    CHECK_THROWS_WITH_AS(softmax_backward(Tensor::zeros(Shape{2, 3}), Tensor::zeros(Shape{3, 2}), 1),
                         doctest::Contains("softmax_backward: the output 2×3 and its gradient 3×2"),
                         std::invalid_argument);
}
