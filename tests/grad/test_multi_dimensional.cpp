// Catalog entry 30, `multi_dimensional_attention` (attention/multi_dimensional.hpp):
// gradient-check cases in the attention registry, and the catalog's property
// tests in double precision: every column of A sums to 1; with equal columns
// of W_d, every column is the additive score's soft weights; each c_i stays in
// the range of its column of V; a fully masked row gives zeros and no gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/multi_dimensional.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

MultiDimensionalAttention& as_multi(Module* m) { return *static_cast<MultiDimensionalAttention*>(m); }

const RegisterMechanisms multi_dimensional_cases({
    {"multi_dimensional_attention", "2 queries, 4 keys, d_v 3", {Shape{2, 2, 3}, Shape{2, 4, 5}, Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 5, 4, 3, g); },
     [](Module* m, const std::vector<Var>& x) {
         const AttentionOutput out = as_multi(m).forward(x[0], x[1], x[2]);
         return concat({reshape(out.output, {-1}), reshape(out.weights, {-1})}, 0);
     }},
    {"multi_dimensional_attention", "causal (DiSAN's directional) mask, self-attention",
     {Shape{1, 4, 3}, Shape{1, 4, 2}},
     [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 3, 4, 2, g); },
     [](Module* m, const std::vector<Var>& x) { return as_multi(m).forward(x[0], x[0], x[1], causal_mask(4, 4)).output; }},
    {"multi_dimensional_attention", "padding and a fully masked row", {Shape{2, 3, 2}, Shape{2, 5, 2}, Shape{2, 5, 3}},
     [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(2, 2, 3, 3, g); },
     [](Module* m, const std::vector<Var>& x) {
         return as_multi(m).forward(x[0], x[1], x[2], key_mask(length_mask({3, 0}, 5))).output;
     }},
});

}  // namespace

TEST_CASE("multi_dimensional_attention: every column of A sums to 1 and c_i stays within column i of V") {
    Generator gen(1);
    MultiDimensionalAttention attention(3, 5, 4, 3, gen);
    const Var Q(Tensor::normal(Shape{2, 2, 3}, 0, 1, gen)), K(Tensor::normal(Shape{2, 6, 5}, 0, 1, gen));
    const Var V(Tensor::normal(Shape{2, 6, 3}, 0, 1, gen));
    const AttentionOutput out = attention.forward(Q, K, V);
    REQUIRE(out.weights.shape() == Shape{2, 2, 6, 3});
    const Tensor column_sums = sum(out.weights.value(), 2);  // B×m×d_v
    for (int64_t i = 0; i < column_sums.numel(); ++i) CHECK(std::abs(column_sums[i] - 1) <= 1e-12);
    const Tensor lo = min(V.value(), 1), hi = max(V.value(), 1);  // B×d_v
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j) {
                CHECK(out.output.value().at({b, i, j}) >= lo.at({b, j}) - 1e-12);
                CHECK(out.output.value().at({b, i, j}) <= hi.at({b, j}) + 1e-12);
            }
    // The features are weighed differently: columns of A differ.
    CHECK(std::abs(out.weights.value().at({0, 0, 0, 0}) - out.weights.value().at({0, 0, 0, 1})) > 1e-6);
}

TEST_CASE("multi_dimensional_attention: W_d with equal columns w gives additive_score + soft_alignment in every column") {
    Generator gen(2);
    MultiDimensionalAttention multi(3, 5, 4, 3, gen);
    AdditiveScore additive(3, 5, 4, gen);
    additive.W_1.value().copy_(multi.W_1.value());
    additive.W_2.value().copy_(multi.W_2.value());
    additive.b.value().copy_(multi.b.value());
    for (int64_t h = 0; h < 4; ++h)
        for (int64_t j = 0; j < 3; ++j) multi.W_d.value().at({h, j}) = additive.w.value()[h];  // every column = w

    const Var Q(Tensor::normal(Shape{2, 2, 3}, 0, 1, gen)), K(Tensor::normal(Shape{2, 6, 5}, 0, 1, gen));
    const Var V(Tensor::normal(Shape{2, 6, 3}, 0, 1, gen));
    const Tensor mask = key_mask(length_mask({6, 4}, 6));
    const Tensor A = multi.forward(Q, K, V, mask).weights.value();
    const Tensor a = SoftAlignment().align({additive.score(Q, K), mask, Var(), Tensor()}).value();
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t l = 0; l < 6; ++l)
            for (int64_t j = 0; j < 3; ++j) CHECK(std::abs(A[(r * 6 + l) * 3 + j] - a[r * 6 + l]) <= 1e-12);
}

TEST_CASE("multi_dimensional_attention: a fully masked row gives zero weights, output and gradient") {
    Generator gen(3);
    MultiDimensionalAttention attention(2, 2, 3, 3, gen);
    Var Q(Tensor::normal(Shape{2, 3, 2}, 0, 1, gen), true), K(Tensor::normal(Shape{2, 5, 2}, 0, 1, gen), true);
    Var V(Tensor::normal(Shape{2, 5, 3}, 0, 1, gen), true);
    const AttentionOutput out = attention.forward(Q, K, V, key_mask(length_mask({5, 0}, 5)));
    sum(out.output * Var(Tensor::normal(out.output.shape(), 0, 1, gen))).backward();
    for (int64_t i = 9; i < 18; ++i) CHECK(out.output.value()[i] == 0);
    for (int64_t i = 45; i < 90; ++i) CHECK(out.weights.value()[i] == 0);
    for (int64_t i = 6; i < 12; ++i) CHECK(Q.grad()[i] == 0);
    for (int64_t i = 10; i < 20; ++i) CHECK(K.grad()[i] == 0);
    for (int64_t i = 15; i < 30; ++i) CHECK(V.grad()[i] == 0);
}

TEST_CASE("multi_dimensional_attention: its taxonomy and its shape errors") {
    Generator gen(4);
    MultiDimensionalAttention attention(3, 5, 4, 3, gen);
    CHECK(attention.id() == "multi_dimensional_attention");
    CHECK(attention.taxonomy().dimensionality == "multi");
    CHECK(!single_dimensional_attention(attention.taxonomy()));
    CHECK_THROWS_WITH_AS(attention.forward(Var(Tensor::zeros(Shape{2, 1, 3})), Var(Tensor::zeros(Shape{2, 4, 4})),
                                           Var(Tensor::zeros(Shape{2, 4, 3}))),
                         "multi_dimensional_attention: queries 2×1×3, keys 2×4×4 and values 2×4×3 need widths "
                         "d_q = 3, d_k = 5, d_v = 3",
                         std::invalid_argument);
}
