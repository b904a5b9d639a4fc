// Sentence-pair and paired-input attention, catalog entries 67–73
// (attention/sentence_pair.hpp): gradient-check cases in the attention
// registry, and each entry's property tests in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "attention/sentence_pair.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


std::unique_ptr<Module> abcnn_layer(AbcnnLayer::Kind kind, Generator& g) {
    return std::make_unique<AbcnnLayer>(kind, 4, 3, 2, 2, g);
}

Var abcnn_layer_run(Module* m, const std::vector<Var>& x) {
    const auto out = as<AbcnnLayer>(m).forward(x[0], x[1], length_mask({4, 3}, 4), length_mask({2, 4}, 4));
    return concat({flat(out.out0), flat(out.out1)}, 0);
}

Var cosnet_run(Module* m, const std::vector<Var>& x) {
    const auto out = as<CosnetCoAttention>(m).forward(x[0], x[1]);
    return concat({flat(out.out_a), flat(out.out_b)}, 0);
}

const RegisterMechanisms sentence_pair_cases({
    {"abcnn1_attention",
     "s 4, d 3, lengths (4, 2) and (3, 4)",
     {Shape{2, 4, 3}, Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<AbcnnOneAttention>(4, 3, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<AbcnnOneAttention>(m).forward(x[0], x[1], length_mask({4, 2}, 4), length_mask({3, 4}, 4));
         return concat({flat(out.channels0), flat(out.channels1), flat(out.weights)}, 0);
     }},
    {"abcnn1_attention",
     "a whole ABCNN-1 layer: attention channels, wide conv w 2, w-ap",
     {Shape{2, 4, 3}, Shape{2, 4, 3}},
     [](Generator& g) { return abcnn_layer(AbcnnLayer::Kind::one, g); },
     abcnn_layer_run},
    {"abcnn2_attention",
     "attention pooling of conv outputs 5 and 4 of 3, w 2, masks",
     {Shape{2, 5, 3}, Shape{2, 4, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         const auto out = abcnn2_attention(x[0], x[1], 2, length_mask({5, 3}, 5), length_mask({4, 4}, 4));
         return concat({flat(out.pooled0), flat(out.pooled1), flat(out.weights)}, 0);
     }},
    {"abcnn2_attention",
     "a whole ABCNN-2 layer: wide conv w 2, attention pooling",
     {Shape{2, 4, 3}, Shape{2, 4, 3}},
     [](Generator& g) { return abcnn_layer(AbcnnLayer::Kind::two, g); },
     abcnn_layer_run},
    {"abcnn3_attention",
     "a whole ABCNN-3 layer: attention channels, wide conv, attention pooling",
     {Shape{2, 4, 3}, Shape{2, 4, 3}},
     [](Generator& g) { return abcnn_layer(AbcnnLayer::Kind::three, g); },
     abcnn_layer_run},
    {"decomposable_attention",
     "ℓ_a 3, ℓ_b 4, d 3, hidden 4, 3 classes, masks",
     {Shape{2, 3, 3}, Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<DecomposableAttention>(3, 4, 3, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out =
             as<DecomposableAttention>(m).forward(x[0], x[1], length_mask({3, 2}, 3), length_mask({4, 3}, 4));
         return concat({flat(out.logits), flat(out.weights_a), flat(out.weights_b)}, 0);
     }},
    {"decomposable_attention",
     "with intra-sentence attention and distance biases",
     {Shape{1, 3, 2}, Shape{1, 4, 2}},
     [](Generator& g) {
         auto m = std::make_unique<DecomposableAttention>(2, 3, 2, g, /*intra=*/true);
         m->distance_bias.value().copy_(Tensor::normal(Shape{21}, 0, 1, g));
         return m;
     },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<DecomposableAttention>(m).forward(x[0], x[1], Tensor(), length_mask({3}, 4));
         return concat({flat(out.logits), flat(out.weights_a)}, 0);
     }},
    {"compositional_de_attention",
     "identity F, α 1.5, β 0.5, ℓ_a 3, ℓ_b 4, d 3, masks",
     {Shape{2, 3, 3}, Shape{2, 4, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         const auto out = compositional_de_attention(x[0], x[1], 1.5, 0.5, length_mask({3, 2}, 3), length_mask({4, 1}, 4));
         return concat({flat(out.aligned_a), flat(out.aligned_b), flat(out.weights)}, 0);
     }},
    {"compositional_de_attention",
     "dense F_E, F_N (3 → 2)",
     {Shape{2, 3, 3}, Shape{2, 2, 3}},
     [](Generator& g) { return std::make_unique<CompositionalDeAttention>(3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<CompositionalDeAttention>(m).forward(x[0], x[1]);
         return concat({flat(out.aligned_a), flat(out.aligned_b)}, 0);
     }},
    {"cosnet_co_attention",
     "vanilla W, C 3, 2×2 frames",
     {Shape{2, 3, 2, 2}, Shape{2, 3, 2, 2}},
     [](Generator& g) { return std::make_unique<CosnetCoAttention>(3, CosnetCoAttention::Variant::vanilla, g); },
     cosnet_run},
    {"cosnet_co_attention",
     "symmetric W = Pᵀ D P, C 2, 2×3 frames",
     {Shape{1, 2, 2, 3}, Shape{1, 2, 2, 3}},
     [](Generator& g) { return std::make_unique<CosnetCoAttention>(2, CosnetCoAttention::Variant::symmetric, g); },
     cosnet_run},
    {"cosnet_co_attention",
     "channel-wise W = D, C 3, 2×2 frames",
     {Shape{1, 3, 2, 2}, Shape{1, 3, 2, 2}},
     [](Generator& g) { return std::make_unique<CosnetCoAttention>(3, CosnetCoAttention::Variant::channel, g); },
     cosnet_run},
    {"can_cross_attention",
     "c 3, 2×2 maps (m 4), r 2, τ 0.5",
     {Shape{2, 3, 2, 2}, Shape{2, 3, 2, 2}},
     [](Generator& g) { return std::make_unique<CanCrossAttention>(4, 2, g, 0.5); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<CanCrossAttention>(m).forward(x[0], x[1]);
         return concat({flat(out.P_bar), flat(out.Q_bar)}, 0);
     }},
});

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

}  // namespace

// ---- 67. abcnn1_attention ---------------------------------------------------------------------

TEST_CASE("abcnn1_attention: A((0,0), (3,4)) = 1/6; A ∈ (0, 1], 1 for equal rows; swapping transposes A") {
    const Var F0(Tensor::from({0, 0, 1, 2}, {1, 2, 2})), F1(Tensor::from({3, 4, 1, 2}, {1, 2, 2}));
    const Tensor A = abcnn_match_scores(F0, F1).value();
    CHECK(std::abs(A.at({0, 0, 0}) - 0.166667) < 1e-6);
    CHECK(std::abs(A.at({0, 1, 1}) - 1) < 1e-6);  // equal rows
    Generator gen(67);
    const Var X(normal({2, 4, 3}, gen)), Y(normal({2, 5, 3}, gen));
    const Tensor xy = abcnn_match_scores(X, Y).value(), yx = abcnn_match_scores(Y, X).value();
    CHECK(allclose(transpose(xy, 1, 2), yx, 0, 1e-12));
    for (int64_t i = 0; i < xy.numel(); ++i) {
        CHECK(xy[i] > 0);
        CHECK(xy[i] < 1);
    }
    // padding: zero match scores, so zero attention features from it
    AbcnnOneAttention att(4, 3, gen);
    const auto out = att.forward(X, Var(normal({2, 4, 3}, gen)), length_mask({4, 2}, 4));
    for (int64_t j = 0; j < 4; ++j) CHECK(out.weights.value().at({1, 3, j}) == 0);
    for (int64_t c = 0; c < 3; ++c) CHECK(out.features0.value().at({1, 3, c}) == 0);
    CHECK(out.channels0.shape() == Shape{2, 2, 4, 3});
    CHECK_THROWS_AS(att.forward(X, Y), std::invalid_argument);
}

// ---- 68. abcnn2_attention ---------------------------------------------------------------------

TEST_CASE("abcnn2_attention: outputs return to s_k; a = row/column sums of A; weights 1 give width-w sum pooling") {
    Generator gen(68);
    const Var c0(normal({2, 6, 3}, gen)), c1(normal({2, 4, 3}, gen));  // s_0 = 4, s_1 = 2 with w = 3
    const auto out = abcnn2_attention(c0, c1, 3);
    CHECK(out.pooled0.shape() == Shape{2, 4, 3});
    CHECK(out.pooled1.shape() == Shape{2, 2, 3});
    CHECK(allclose(out.unit0.value(), sum(out.weights.value(), 2), 0, 1e-12));
    CHECK(allclose(out.unit1.value(), sum(out.weights.value(), 1), 0, 1e-12));
    // F^p_0[1] = Σ_{r=1}^{3} a_{0,r} F^c_0[r]
    for (int64_t c = 0; c < 3; ++c) {
        double expected = 0;
        for (int64_t r = 1; r <= 3; ++r) expected += out.unit0.value().at({0, r}) * c0.value().at({0, r, c});
        CHECK(std::abs(out.pooled0.value().at({0, 1, c}) - expected) < 1e-12);
    }
    const Tensor summed = attention_weighted_pool(c0, Var(Tensor::ones(Shape{2, 6})), 3).value();
    CHECK(allclose(summed, mul(window_average_pool(c0, 3).value(), Tensor::scalar(3)), 0, 1e-12));
    CHECK(std::abs(summed.at({1, 2, 0}) - (c0.value().at({1, 2, 0}) + c0.value().at({1, 3, 0}) +
                                           c0.value().at({1, 4, 0}))) < 1e-12);
}

// ---- 69. abcnn3_attention ---------------------------------------------------------------------

TEST_CASE("abcnn3_attention: with W_0 = W_1 = 0 the attention channel is zero and the layer equals ABCNN-2") {
    Generator gen(69);
    AbcnnLayer three(AbcnnLayer::Kind::three, 5, 3, 4, 3, gen);
    AbcnnLayer two(AbcnnLayer::Kind::two, 5, 3, 4, 3, gen);
    three.input_attention->W_0.value().fill_(0);
    three.input_attention->W_1.value().fill_(0);
    // ABCNN-2's single channel is ABCNN-3's first: copy those filters and the bias
    two.conv.weight.value().copy_(slice(three.conv.weight.value(), 1, 0, 1));
    two.conv.bias.value().copy_(three.conv.bias.value());
    const Var F0(normal({2, 5, 3}, gen)), F1(normal({2, 5, 3}, gen));
    const Tensor m0 = length_mask({5, 3}, 5), m1 = length_mask({4, 5}, 5);
    const auto a = three.forward(F0, F1, m0, m1);
    const auto b = two.forward(F0, F1, m0, m1);
    CHECK(allclose(a.out0.value(), b.out0.value(), 0, 1e-12));
    CHECK(allclose(a.out1.value(), b.out1.value(), 0, 1e-12));
    CHECK(a.out0.shape() == Shape{2, 5, 4});
    CHECK(a.input_attention.defined());
    CHECK(a.pooling_attention.shape() == Shape{2, 7, 7});
    CHECK(three.id() == "abcnn3_attention");
    // padding rows stay zero
    for (int64_t c = 0; c < 4; ++c) CHECK(a.out0.value().at({1, 4, c}) == 0);
}

// ---- 70. decomposable_attention ---------------------------------------------------------------

TEST_CASE("decomposable_attention: without intra-attention, word order does not matter; padding is excluded") {
    Generator gen(70);
    DecomposableAttention model(3, 5, 3, gen);
    const Tensor a = normal({1, 4, 3}, gen), b = normal({1, 3, 3}, gen);
    const Tensor y = model.forward(Var(a), Var(b)).logits.value();
    const Tensor y_perm =
        model.forward(Var(index_select(a, 1, {2, 0, 3, 1})), Var(index_select(b, 1, {1, 2, 0}))).logits.value();
    CHECK(allclose(y, y_perm, 0, 1e-12));
    CHECK(!allclose(y, model.forward(Var(b), Var(a)).logits.value(), 0, 1e-6));  // not a dead network
    // two padding tokens of garbage, masked: the same logits
    const Tensor b_padded = concat({b, mul(normal({1, 2, 3}, gen), Tensor::scalar(9))}, 1);
    const auto padded = model.forward(Var(a), Var(b_padded), Tensor(), length_mask({3}, 5));
    CHECK(allclose(padded.logits.value(), y, 0, 1e-12));
    for (int64_t i = 0; i < 4; ++i) CHECK(padded.weights_a.value().at({0, i, 4}) == 0);
    // with intra-attention the distance biases make order matter
    DecomposableAttention intra(3, 8, 3, gen, /*intra=*/true);
    intra.distance_bias.value().copy_(normal({DecomposableAttention::kDistanceBuckets}, gen));
    const Tensor z = intra.forward(Var(a), Var(b)).logits.value();
    const Tensor z_perm = intra.forward(Var(index_select(a, 1, {2, 0, 3, 1})), Var(b)).logits.value();
    CHECK(!allclose(z, z_perm, 0, 1e-6));
}

// ---- 71. compositional_de_attention -----------------------------------------------------------

TEST_CASE("compositional_de_attention: a (1,0), b (1,0), (0,1) give M = (0.380797, 0); |M| < 1; it can subtract") {
    const Var a(Tensor::from({1, 0}, {1, 1, 2})), b(Tensor::from({1, 0, 0, 1}, {1, 2, 2}));
    const auto out = compositional_de_attention(a, b);
    CHECK(std::abs(out.weights.value()[0] - 0.380797) < 1e-6);
    CHECK(out.weights.value()[1] == 0);  // E = 0 ⇒ M = 0
    Generator gen(71);
    const auto r = compositional_de_attention(Var(normal({2, 4, 3}, gen)), Var(normal({2, 5, 3}, gen)), 2, 0.5,
                                              Tensor(), length_mask({5, 3}, 5));
    bool negative = false;
    for (int64_t i = 0; i < r.weights.numel(); ++i) {
        CHECK(std::abs(r.weights.value()[i]) < 1);
        negative = negative || r.weights.value()[i] < 0;
    }
    CHECK(negative);
    CHECK(r.weights.value().at({1, 0, 4}) == 0);  // padding
}

// ---- 72. cosnet_co_attention ------------------------------------------------------------------

TEST_CASE("cosnet_co_attention: Z_a mixes rows of V_b convexly; symmetric W with V_a = V_b gives Z_a = Z_b") {
    Generator gen(72);
    CosnetCoAttention vanilla(3, CosnetCoAttention::Variant::vanilla, gen);
    const Var Va(normal({1, 3, 2, 3}, gen)), Vb(normal({1, 3, 2, 3}, gen));
    const auto out = vanilla.forward(Va, Vb);
    const Tensor row_sums = sum(out.weights_a.value(), -1);
    for (int64_t i = 0; i < row_sums.numel(); ++i) CHECK(std::abs(row_sums[i] - 1) < 1e-12);
    for (int64_t i = 0; i < out.weights_a.numel(); ++i) CHECK(out.weights_a.value()[i] >= 0);
    for (int64_t i = 0; i < out.gate_a.numel(); ++i) {
        CHECK(out.gate_a.value()[i] > 0);
        CHECK(out.gate_a.value()[i] < 1);
    }
    CHECK(out.out_a.shape() == Shape{1, 6, 2, 3});
    // the second half of the channels is V_a itself
    CHECK(allclose(slice(out.out_a.value(), 1, 3, 6), Va.value(), 0, 0));
    CHECK(allclose(vanilla.forward(Va, Va).out_a.value(), vanilla.forward(Va, Va).out_b.value(), 0, 1e-12) == false);

    for (auto variant : {CosnetCoAttention::Variant::symmetric, CosnetCoAttention::Variant::channel}) {
        CosnetCoAttention sym(3, variant, gen);
        const auto same = sym.forward(Va, Va);
        CHECK(allclose(same.out_a.value(), same.out_b.value(), 0, 1e-12));
    }
}

// ---- 73. can_cross_attention ------------------------------------------------------------------

TEST_CASE("can_cross_attention: A^p sums to 1; W_2 = 0 gives P̄ = (1 + 1/m) P; swapping P and Q swaps outputs") {
    Generator gen(73);
    CanCrossAttention can(6, 3, gen);
    const Var P(normal({2, 4, 2, 3}, gen)), Q(normal({2, 4, 2, 3}, gen));
    const auto out = can.forward(P, Q);
    for (const Var* A : {&out.weights_p, &out.weights_q}) {
        const Tensor sums = sum(A->value(), -1);
        for (int64_t i = 0; i < sums.numel(); ++i) CHECK(std::abs(sums[i] - 1) < 1e-12);
    }
    const auto swapped = can.forward(Q, P);
    CHECK(allclose(swapped.P_bar.value(), out.Q_bar.value(), 0, 1e-12));
    CHECK(allclose(swapped.Q_bar.value(), out.P_bar.value(), 0, 1e-12));
    can.W_2.value().fill_(0);
    CHECK(allclose(can.forward(P, Q).P_bar.value(), mul(P.value(), Tensor::scalar(1 + 1.0 / 6)), 0, 1e-12));
    CHECK_THROWS_AS(can.forward(P, Var(normal({2, 4, 3, 3}, gen))), std::invalid_argument);
}
