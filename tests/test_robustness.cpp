// Inputs at the edge of what the library accepts: empty sequences, empty
// products, non-finite values where a mask says they cannot matter. Each
// case here once crashed or returned NaN silently; the comment says how.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attention/multi_head.hpp"
#include "attention/query_types.hpp"
#include "attention/scaled_dot_product.hpp"
#include "attention/transformer.hpp"
#include "autograd/ops.hpp"
#include "tensor/env.hpp"
#include "tensor/ops.hpp"

using namespace attn;

namespace {

bool all_zero(const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (t[i] != 0) return false;
    return true;
}

bool all_finite(const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(t[i])) return false;
    return true;
}

}  // namespace

// The backward of matmul counted the matrices of a batch as numel / (rows·cols),
// a division by zero when a matrix has no rows: SIGFPE.
TEST_CASE("robustness: matmul with a zero-length axis, forward and backward") {
    Var x(Tensor::zeros({2, 0, 8}), true), y(Tensor::ones({8, 4}), true);
    Var z = matmul(x, y);
    CHECK(z.shape() == Shape{2, 0, 4});
    sum(z).backward();
    CHECK(y.grad().shape() == Shape{8, 4});
    CHECK(all_zero(y.grad()));

    Var a(Tensor::ones({2, 3, 0}), true), b(Tensor::ones({0, 4}), true);
    Var c = matmul(a, b);  // an empty sum: zeros
    CHECK(c.shape() == Shape{2, 3, 4});
    CHECK(all_zero(c.value()));
    sum(c).backward();
    CHECK(a.grad().shape() == Shape{2, 3, 0});
}

// With n = 0 keys every query's keys are "all masked": zero output, zero
// gradient, as the library promises for a fully masked row. The fused heads
// threw a GEMM leading-dimension error (ldc = n = 0) where the composite
// returned zeros.
TEST_CASE("robustness: attention over an empty sequence gives zeros, composite and fused alike") {
    Generator gen(3);
    for (bool fused : {false, true}) {
        CAPTURE(fused);
        Generator g(7);
        MultiHeadAttention mha(8, 2, g, {.fused = fused});
        Var q(Tensor::normal({2, 3, 8}, 0, 1, gen), true), kv(Tensor::zeros({2, 0, 8}), true);
        AttentionOutput o = mha.forward(q, kv, kv);
        CHECK(o.output.shape() == Shape{2, 3, 8});
        CHECK(o.weights.shape() == Shape{2, 2, 3, 0});
        // The output is the bias-free projection of a zero context: zero.
        CHECK(all_zero(o.output.value()));
        sum(o.output).backward();
        CHECK(all_zero(q.grad()));
    }
    BahdanauAttention bahdanau(6, 8, 5, gen);
    Var s(Tensor::normal({2, 1, 6}, 0, 1, gen), true), h(Tensor::zeros({2, 0, 8}), true);
    AttentionOutput o = bahdanau.forward(s, h);
    CHECK(o.output.shape() == Shape{2, 1, 8});
    CHECK(all_zero(o.output.value()));
    sum(o.output).backward();
    CHECK(all_finite(s.grad()));
}

// Each of these was undefined behaviour (UndefinedBehaviorSanitizer: a float
// cast to an integer it does not fit) or a silent empty result.
TEST_CASE("robustness: arange refuses NaN and counts past int64_t; an index of 1e20 is named, not cast") {
    const real nan = std::numeric_limits<real>::quiet_NaN();
    CHECK_THROWS_WITH_AS(Tensor::arange(0, 1, nan), doctest::Contains("arange: start, stop and step must be finite"),
                         std::invalid_argument);
    CHECK_THROWS_AS(Tensor::arange(nan, 1, 1), std::invalid_argument);
    CHECK_THROWS_WITH_AS(Tensor::arange(0, static_cast<real>(1e30), 1), doctest::Contains("more than an int64_t counts"),
                         std::length_error);
    CHECK(Tensor::arange(0, 3, 1).numel() == 3);
    CHECK(Tensor::arange(3, 0, 1).numel() == 0);  // an empty range is still allowed
    const Var weight(Tensor::zeros(Shape{4, 2}), true);
    CHECK_THROWS_WITH_AS(embedding(weight, Tensor::from({static_cast<real>(1e20)}, Shape{1})),
                         "embedding: index 1e+20 at position 0 is out of range [0, 4) for weight 4×2", std::out_of_range);
    CHECK_THROWS_WITH_AS(embedding(weight, Tensor::from({-3}, Shape{1})),
                         "embedding: index -3 at position 0 is out of range [0, 4) for weight 4×2", std::out_of_range);
}

// A window radius whose 2r + 1 overflows int64 used to wrap (undefined) and
// reach Shape as "negative dimension -1"; the radius itself is refused now.
TEST_CASE("robustness: a window radius whose 2r+1 overflows is refused by name") {
    Generator gen(1);
    const Var x(Tensor::normal({1, 3, 2}, 0, 1, gen));
    const int64_t huge = std::numeric_limits<int64_t>::max();
    const std::string range = " must be in [0, 4611686018427387903] (the window 2r+1 must fit in int64)";
    CHECK_THROWS_WITH_AS(restricted_self_attention(x, x, x, huge),
                         ("restricted_self_attention: the radius r = 9223372036854775807" + range).c_str(),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(restricted_self_attention(x, x, x, int64_t{1} << 62),
                         ("restricted_self_attention: the radius r = 4611686018427387904" + range).c_str(),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(band_to_dense(Tensor::zeros({1, 3, 3}), huge),
                         ("band_to_dense: the radius r = 9223372036854775807" + range).c_str(), std::invalid_argument);
    CHECK_THROWS_WITH_AS(RelativePositionSelfAttention(2, 2, huge, gen),
                         "relative_position_self_attention: the radius k = 9223372036854775807 must be in [0, "
                         "4611686018427387903] (the window 2k+1 must fit in int64)",
                         std::invalid_argument);
    // A radius reaching past the sequence stays allowed (full attention, padded window).
    CHECK(restricted_self_attention(x, x, x, 2).weights.shape() == Shape{1, 3, 5});
}

// ATTN_SPIN_US was read with strtol, then multiplied by 1000 in a long: a
// value past 2⁶³/1000 overflowed (signed, undefined) and one past 2⁶³ was
// clamped silently. Both settings are now parsed with std::from_chars and
// refused with the variable, its text and the range.
TEST_CASE("robustness: environment settings are whole numbers in range, refused by name otherwise") {
    CHECK(parse_env_integer("ATTN_SPIN_US", "300", 0, 1000000, "microseconds") == 300);
    CHECK(parse_env_integer("ATTN_SPIN_US", "0", 0, 1000000, "microseconds") == 0);
    const char* bad[] = {"99999999999999999999", "9223372036854775807", "-1", "12abc", " 5", "+5", "", "1e3"};
    for (const char* text : bad) {
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(parse_env_integer("ATTN_SPIN_US", text, 0, 1000000, "microseconds"),
                             ("ATTN_SPIN_US=" + std::string(text) +
                              ": expected a whole number of microseconds between 0 and 1000000")
                                 .c_str(),
                             std::invalid_argument);
    }
    CHECK_THROWS_WITH_AS(parse_env_integer("ATTN_NUM_THREADS", "0", 1, 1024, "threads"),
                         "ATTN_NUM_THREADS=0: expected a whole number of threads between 1 and 1024",
                         std::invalid_argument);
}
