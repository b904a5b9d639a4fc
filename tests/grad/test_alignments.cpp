// The deterministic alignments, catalog entries 22, 24, 25 and 28
// (attention/alignments.hpp): each entry's hand-computed reference values in
// double precision (atol 1e-6) and the properties a registry case cannot state.
// Their registry entries and plain-loop references are in
// test_alignments_reference.cpp; the stochastic ones (23, 26, 27) in
// test_alignments_stochastic.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

AlignmentInput scores_only(const Var& e, const Tensor& mask = {}) { return {e, mask, Var(), Tensor()}; }

Var row(std::vector<real> values) {
    const int64_t n = static_cast<int64_t>(values.size());
    return Var(Tensor::from(std::move(values), Shape{1, 1, n}));
}

}  // namespace

// ---- 22. soft_alignment --------------------------------------------------------------------

TEST_CASE("soft_alignment: softmax(0, ln 3) = (0.25, 0.75), shift-invariant, normalized") {
    SoftAlignment soft;
    check_close(soft.align(scores_only(row({0, std::log(3.0)}))).value(), {0.25, 0.75});
    check_close(soft.align(scores_only(row({100, 100 + std::log(3.0)}))).value(), {0.25, 0.75});
    CHECK(soft.normalized());
    // Temperature T: softmax(e / T).
    check_close(SoftAlignment(2).align(scores_only(row({0, 2 * std::log(3.0)}))).value(), {0.25, 0.75});
}

TEST_CASE("soft_alignment: the Jacobian is diag(a) − a aᵀ") {
    const Var e0 = row({0.3, -1.2, 0.8, 2.0});
    const Tensor a = SoftAlignment().align(scores_only(e0)).value();
    for (int64_t j = 0; j < 4; ++j) {
        Var e(e0.value().clone(), true);
        Var out = SoftAlignment().align(scores_only(e));
        Tensor upstream = Tensor::zeros(out.shape());
        upstream[j] = 1;
        out.backward(upstream);  // row j of the Jacobian: ∂a_j/∂e_l
        for (int64_t l = 0; l < 4; ++l)
            CHECK(std::abs(e.grad()[l] - ((j == l ? a[j] : 0) - a[j] * a[l])) <= 1e-12);
    }
}

// ---- 24. local_monotonic_alignment ----------------------------------------------------------------

TEST_CASE("local_monotonic_alignment: e = (1..5), p at the third position, D = 1 → (0, 0.090031, 0.244728, 0.665241, 0)") {
    const Var e = row({1, 2, 3, 4, 5});
    const Tensor p = Tensor::from({2}, Shape{1, 1});
    check_close(LocalMonotonicAlignment(1).align({e, Tensor(), Var(), p}).value(),
                {0, 0.090031, 0.244728, 0.665241, 0});
}

TEST_CASE("local_monotonic_alignment: D ≥ n is soft_alignment; the window is clipped at both ends") {
    Generator gen(2);
    const Var e(Tensor::normal(Shape{2, 5, 5}, 0, 1, gen));
    // Default centres: query i sits at position i.
    check_close(LocalMonotonicAlignment(5).align(scores_only(e)).value(),
               SoftAlignment().align(scores_only(e)).value());
    const Var e1 = row({1, 2, 3, 4, 5});
    const Tensor first = LocalMonotonicAlignment(1).align({e1, Tensor(), Var(), Tensor::from({0}, Shape{1, 1})}).value();
    const Tensor last = LocalMonotonicAlignment(1).align({e1, Tensor(), Var(), Tensor::from({4}, Shape{1, 1})}).value();
    const double s01 = std::exp(1.0) + std::exp(2.0), s34 = std::exp(4.0) + std::exp(5.0);
    check_close(first, {std::exp(1.0) / s01, std::exp(2.0) / s01, 0, 0, 0}, 1e-12);
    check_close(last, {0, 0, 0, std::exp(4.0) / s34, std::exp(5.0) / s34}, 1e-12);
    CHECK_THROWS_AS(LocalMonotonicAlignment(1).align({e, Tensor(), Var(), Tensor::zeros(Shape{2, 3})}),
                    std::invalid_argument);
}

// ---- 25. local_predictive_alignment -----------------------------------------------------------------

TEST_CASE("local_predictive_alignment: e = (1..5), p_t = 2, D = 1 → (0, 0.012184, 0.244728, 0.090031, 0), not normalised") {
    Generator gen(3);
    LocalPredictiveAlignment local_p(1, 1, 1, gen);
    const Var e = row({1, 2, 3, 4, 5});
    const Tensor a = local_p.weights_at(e, Var(Tensor::from({2}, Shape{1, 1, 1})), Tensor()).value();
    check_close(a, {0, 0.012184, 0.244728, 0.090031, 0});
    CHECK(!local_p.normalized());
    CHECK(std::abs(a[1] + a[2] + a[3] - 1) > 0.5);

    // Through align(): W_p = 1, v_p = 1 and q = atanh(logit 0.4) put p_t = S·0.4 = 2.
    local_p.W_p.value().fill_(1);
    local_p.v_p.value().fill_(1);
    const Var q(Tensor::from({std::atanh(std::log(0.4 / 0.6))}, Shape{1, 1, 1}));
    check_close(local_p.align({e, Tensor(), q, Tensor()}).value(), {0, 0.012184, 0.244728, 0.090031, 0});
    // With 3 keys kept, S = 3: p_t = 1.2, window {1, 2} (|0 − 1.2| > 1).
    const Tensor kept3 = key_mask(length_mask({3}, 5));
    const Tensor a3 = local_p.align({e, kept3, q, Tensor()}).value();
    const double s = std::exp(2.0) + std::exp(3.0);
    check_close(a3, {0, std::exp(2.0) / s * std::exp(-2 * 0.2 * 0.2), std::exp(3.0) / s * std::exp(-2 * 0.8 * 0.8), 0, 0},
                1e-12);
}

TEST_CASE("local_predictive_alignment: W_p and v_p learn only through p_t; far positions get exactly 0") {
    Generator gen(4);
    LocalPredictiveAlignment local_p(3, 4, 2, gen);
    const Var e(Tensor::normal(Shape{2, 2, 9}, 0, 1, gen));
    const Var q(Tensor::normal(Shape{2, 2, 3}, 0, 1, gen));
    const Tensor upstream = Tensor::normal(Shape{2, 2, 9}, 0, 1, gen);

    // The whole chain: ∂L/∂W_p and ∂L/∂v_p.
    Var a = local_p.align({e, Tensor(), q, Tensor()});
    a.backward(upstream);
    const Tensor gW = local_p.W_p.grad().clone(), gv = local_p.v_p.grad().clone();
    local_p.zero_grad();

    // The same through p_t alone: ∂L/∂p_t from weights_at, then back through predict_position.
    Var p_t = local_p.predict_position(q, Tensor::full(Shape{2, 2, 1}, 9));
    Var centre(p_t.value().clone(), true);
    local_p.weights_at(e, centre, Tensor()).backward(upstream);
    for (int64_t i = 0; i < centre.grad().numel(); ++i) CHECK(std::abs(centre.grad()[i]) > 1e-8);  // ∂a/∂p_t ≠ 0
    p_t.backward(centre.grad());
    check_close(local_p.W_p.grad(), gW);
    check_close(local_p.v_p.grad(), gv);

    // Outside |l − p_t| ≤ D the weight is exactly 0.
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t l = 0; l < 9; ++l)
            if (std::abs(static_cast<double>(l) - p_t.value()[r]) > 2) CHECK(a.value()[r * 9 + l] == 0);
}

TEST_CASE("local_predictive_alignment: without the queries it throws") {
    Generator gen(5);
    LocalPredictiveAlignment local_p(2, 3, 1, gen);
    CHECK_THROWS_AS(local_p.align(scores_only(row({1, 2}))), std::invalid_argument);
}

// ---- 28. elementwise_alignment ------------------------------------------------------------------------

TEST_CASE("elementwise_alignment: σ and ReLU/{1, n} are local: changing e_j leaves a_l (l ≠ j) alone") {
    using K = ElementwiseAlignment::Kind;
    using N = ElementwiseAlignment::Normalizer;
    const Var e = row({0.5, -1.0, 2.0, 0.25}), e_changed = row({0.5, 3.0, 2.0, 0.25});
    for (auto [kind, norm] : {std::pair{K::sigmoid, N::one}, {K::relu, N::one}, {K::relu, N::length}}) {
        ElementwiseAlignment align(kind, norm);
        CHECK(!align.normalized());  // it does not claim rows sum to 1
        const Tensor a = align.align(scores_only(e)).value(), b = align.align(scores_only(e_changed)).value();
        for (int64_t l : {0, 2, 3}) CHECK(a[l] == b[l]);
        CHECK(a[1] != b[1]);
    }
    // Sum normalisation is not local: every weight moves.
    ElementwiseAlignment by_sum(K::relu, N::sum);
    const Tensor a = by_sum.align(scores_only(e)).value(), b = by_sum.align(scores_only(e_changed)).value();
    CHECK(a[0] != b[0]);
    check_close(a, {0.5 / (2.75 + 1e-6), 0, 2 / (2.75 + 1e-6), 0.25 / (2.75 + 1e-6)}, 1e-12);
    // Reference values: σ(0.5) = 0.622459, ReLU/n with n = 4.
    check_close(ElementwiseAlignment().align(scores_only(e)).value(), {0.622459, 0.268941, 0.880797, 0.562177});
    check_close(ElementwiseAlignment(K::relu, N::length).align(scores_only(e)).value(), {0.125, 0, 0.5, 0.0625});
}

TEST_CASE("elementwise_alignment: the sigmoid takes no normaliser") {
    CHECK_THROWS_AS(ElementwiseAlignment(ElementwiseAlignment::Kind::sigmoid, ElementwiseAlignment::Normalizer::sum),
                    std::invalid_argument);
}
