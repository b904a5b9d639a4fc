// Sequence variants, catalog entries 53, 55 and 56 (attention/sequence_variants.hpp):
// gradient-check cases in the attention registry, and each entry's property
// tests in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "attention/query_types.hpp"
#include "attention/sequence_variants.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


Var step_run(Module* m, const std::vector<Var>& x, const Tensor& mask) {
    auto& att = as<DoublyStochasticSoftAttention>(m);
    const auto out = att.step(x[1], att.precompute(x[0], mask));
    return concat({flat(out.output), flat(out.weights)}, 0);
}

const RegisterMechanisms sequence_variant_cases({
    {"doubly_stochastic_soft_attention",
     "one gated step, L 5, D 3, d_h 4, lengths 5 and 0",
     {Shape{2, 5, 3}, Shape{2, 4}},
     [](Generator& g) { return std::make_unique<DoublyStochasticSoftAttention>(3, 4, 6, g); },
     [](Module* m, const std::vector<Var>& x) {
         return step_run(m, x, length_mask({5, 0}, 5));
     }},
    {"doubly_stochastic_soft_attention",
     "ungated step",
     {Shape{2, 4, 2}, Shape{2, 3}},
     [](Generator& g) { return std::make_unique<DoublyStochasticSoftAttention>(2, 3, 4, g, /*gated=*/false); },
     [](Module* m, const std::vector<Var>& x) { return step_run(m, x, Tensor()); }},
    {"doubly_stochastic_soft_attention",
     "the penalty over T 3 × L 4 weights, λ 0.7",
     {Shape{2, 3, 4}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         return doubly_stochastic_penalty(softmax(x[0], -1), 0.7, Tensor::from({1, 1, 1, 1, 1, 0}, {2, 3}));
     }},
    {"feed_forward_attention",
     "T 5 of 3, lengths 4 and 0",
     {Shape{2, 5, 3}},
     [](Generator& g) { return std::make_unique<FeedForwardAttention>(3, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<FeedForwardAttention>(m).forward(x[0], length_mask({4, 0}, 5));
         return concat({flat(out.output), flat(out.weights)}, 0);
     }},
    {"structured_self_attention",
     "r 3 rows, d_a 4, n 5 of 3, lengths 5 and 2",
     {Shape{2, 5, 3}},
     [](Generator& g) { return std::make_unique<StructuredSelfAttention>(3, 4, 3, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<StructuredSelfAttention>(m).forward(x[0], length_mask({5, 2}, 5));
         return concat({flat(out.output), flat(out.weights), out.penalty}, 0);
     }},
});

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

}  // namespace

// ---- 53. doubly_stochastic_soft_attention ----------------------------------------------------

TEST_CASE(
    "doubly_stochastic_soft_attention: the penalty is 0 for a permutation matrix, λ L (1 − T/L)² for uniform weights") {
    const Tensor perm = Tensor::from({0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1}, {1, 4, 4});
    CHECK(doubly_stochastic_penalty(Var(perm)).item() == 0);
    // T = 2, L = 4, α = 1/4 everywhere: Σ_t α_ti = 0.5, so 2 · 4 · 0.25 = 2
    CHECK(std::abs(doubly_stochastic_penalty(Var(Tensor::full({1, 2, 4}, 0.25)), 2).item() - 2.0) < 1e-12);
    // a masked step counts for nothing: one step of α = 1/4 left → 4 · (0.75)² = 2.25
    CHECK(
        std::abs(doubly_stochastic_penalty(Var(Tensor::full({1, 2, 4}, 0.25)), 1, Tensor::from({1, 0}, {1, 2})).item() -
                 2.25) < 1e-12);
}

TEST_CASE("doubly_stochastic_soft_attention: β ∈ (0, 1) scales the context; β ≡ 1 is additive score + soft alignment") {
    Generator gen(53);
    DoublyStochasticSoftAttention gated(3, 4, 5, gen);
    DoublyStochasticSoftAttention plain(3, 4, 5, gen, /*gated=*/false);
    for (auto [from, to] : {std::pair{&gated.W_a, &plain.W_a}, std::pair{&gated.b_a, &plain.b_a},
                            std::pair{&gated.W_h, &plain.W_h}, std::pair{&gated.v, &plain.v}})
        to->value().copy_(from->value());
    const Var A(normal({2, 6, 3}, gen)), h(normal({2, 4}, gen));
    const auto g = gated.step(h, gated.precompute(A));
    const auto p = plain.step(h, plain.precompute(A));
    for (int64_t b = 0; b < 2; ++b) {
        const real beta = g.gate.value()[b];
        CHECK(beta > 0);
        CHECK(beta < 1);
        for (int64_t j = 0; j < 3; ++j)
            CHECK(std::abs(g.output.value().at({b, j}) - beta * p.output.value().at({b, j})) < 1e-12);
    }
    // β ≡ 1: the additive score (W_1 = W_h, W_2 = W_a, b = b_a, w = v) with a softmax
    AdditiveScore additive(4, 3, 5, gen);
    additive.W_1.value().copy_(plain.W_h.value());
    additive.W_2.value().copy_(plain.W_a.value());
    additive.b.value().copy_(plain.b_a.value());
    additive.w.value().copy_(plain.v.value());
    const Tensor alpha = softmax(additive.score(unsqueeze(h, 1), A).value(), -1);
    CHECK(allclose(p.weights.value(), squeeze(alpha, 1), 0, 1e-12));
    CHECK(allclose(p.output.value(), squeeze(matmul(alpha, A.value()), 1), 0, 1e-12));
}

TEST_CASE("doubly_stochastic_soft_attention: W4's sizes give the attention's share of its parameter count") {
    Generator gen(54);
    // W_a Linear(64→128) with bias, W_h 256→128 and v without, gate Linear(256→1)
    DoublyStochasticSoftAttention att(64, 256, 128, gen);
    CHECK(att.num_parameters() == (128 * 64 + 128) + 128 * 256 + 128 + (256 + 1));
    CHECK_THROWS_AS(att.step(Var(normal({2, 255}, gen)), att.precompute(Var(normal({2, 9, 64}, gen)))),
                    std::invalid_argument);
}

// ---- 55. feed_forward_attention -------------------------------------------------------------

TEST_CASE("feed_forward_attention: permuting the time steps leaves c unchanged; weight ratio ≤ e²") {
    Generator gen(55);
    FeedForwardAttention att(3, gen);
    att.w.value().copy_(Tensor::from({4, -3, 5}));  // large, to push tanh to its bounds
    const Tensor H = normal({2, 6, 3}, gen);
    const std::vector<int64_t> perm{3, 5, 0, 1, 4, 2};
    const AttentionOutput a = att.forward(Var(H));
    const AttentionOutput b = att.forward(Var(index_select(H, 1, perm)));
    CHECK(allclose(a.output.value(), b.output.value(), 0, 1e-12));
    for (int64_t bi = 0; bi < 2; ++bi) {
        const Tensor w = slice(a.weights.value(), 0, bi, bi + 1);
        CHECK(max(w).item() / min(w).item() <= 7.389056 + 1e-6);
    }
}

// ---- 56. structured_self_attention ----------------------------------------------------------

TEST_CASE("structured_self_attention: rows sum to 1; P = 0 exactly for one-hot rows on distinct positions") {
    Generator gen(56);
    StructuredSelfAttention att(3, 4, 2, gen);
    const auto out = att.forward(Var(normal({2, 5, 3}, gen)), length_mask({5, 3}, 5));
    const Tensor row_sums = sum(out.weights.value(), -1);
    for (int64_t i = 0; i < row_sums.numel(); ++i) CHECK(std::abs(row_sums[i] - 1) < 1e-12);
    CHECK(out.penalty.shape() == Shape{2});

    const Tensor distinct = Tensor::from({0, 1, 0, 0, 0, 0, 0, 1}, {1, 2, 4});
    const Tensor same = Tensor::from({0, 1, 0, 0, 0, 1, 0, 0}, {1, 2, 4});
    const Tensor spread = Tensor::from({0.5, 0.5, 0, 0, 0, 0, 0.5, 0.5}, {1, 2, 4});
    CHECK(structured_penalty(Var(distinct)).item() == 0);
    CHECK(structured_penalty(Var(same)).item() == 2);      // the off-diagonal 1s
    CHECK(structured_penalty(Var(spread)).item() == 0.5);  // the diagonal 0.5s: 2 · 0.25
}

TEST_CASE("structured_self_attention: r = 1 is constant-query self-attention with b = 0") {
    Generator gen(57);
    StructuredSelfAttention structured(3, 4, 1, gen);
    ConstantQuerySelfAttention constant(3, 4, gen);
    constant.W.value().copy_(structured.W_s1.value());
    constant.b.value().fill_(0);
    constant.w.value().copy_(structured.W_s2.value().reshape(Shape{4}));
    const Var H(normal({2, 5, 3}, gen));
    const Tensor mask = length_mask({5, 2}, 5);
    const auto a = structured.forward(H, mask);
    const auto b = constant.forward(H, mask);
    CHECK(allclose(a.output.value(), b.output.value(), 0, 1e-12));
    CHECK(allclose(a.weights.value(), b.weights.value(), 0, 1e-12));
}
