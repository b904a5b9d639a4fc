// Sentence-pair and paired-input attention, catalog entries 67–73
// (attention/sentence_pair.hpp): the registry entries (tests/grad/catalog.hpp),
// checked against the independent references of
// test_sentence_pair_reference.cpp, and each entry's hand-computed values and
// tests on special parameters, in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "attention/sentence_pair.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/test_sentence_pair_reference.hpp"

using namespace attn;
using namespace attn::testing;
using namespace attn::testing::sentence_pair;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- how the cases run the modules -----------------------------------------------------------

Outputs abcnn1_run(Module* m, In x, Masks k) {
    const auto o = as<AbcnnOneAttention>(m).forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1));
    return {{"weights", o.weights},
            {"features0", o.features0},
            {"features1", o.features1},
            {"channels0", o.channels0},
            {"channels1", o.channels1}};
}

Outputs abcnn_layer_run(Module* m, In x, Masks k) {
    const auto o = as<AbcnnLayer>(m).forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1));
    Outputs out;
    if (o.input_attention.defined()) out.push_back({"input_attention", o.input_attention});
    if (o.pooling_attention.defined()) out.push_back({"pooling_attention", o.pooling_attention});
    out.push_back({"out0", o.out0});
    out.push_back({"out1", o.out1});
    return out;
}

Make abcnn_layer(AbcnnLayer::Kind kind, int64_t s, int64_t d, int64_t d_out, int64_t w) {
    return [=](Generator& g) { return std::make_unique<AbcnnLayer>(kind, s, d, d_out, w, g); };
}

Run abcnn2_run(int64_t w) {
    return [w](Module*, In x, Masks k) -> Outputs {
        const auto o = abcnn2_attention(x[0], x[1], w, mask_or_none(k, 0), mask_or_none(k, 1));
        return {{"weights", o.weights}, {"unit0", o.unit0}, {"unit1", o.unit1}, {"pooled0", o.pooled0},
                {"pooled1", o.pooled1}};
    };
}

Outputs decomposable_run(Module* m, In x, Masks k) {
    const auto o = as<DecomposableAttention>(m).forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1));
    return {{"logits", o.logits}, {"weights_a", o.weights_a}, {"weights_b", o.weights_b}};
}

Make decomposable(int64_t d, int64_t hidden, int64_t classes, bool intra) {
    return [=](Generator& g) { return std::make_unique<DecomposableAttention>(d, hidden, classes, g, intra); };
}

Outputs coda_outputs(const CodaOutput& o) {
    return {{"aligned_a", o.aligned_a}, {"aligned_b", o.aligned_b}, {"weights", o.weights}};
}

Outputs cosnet_run(Module* m, In x, Masks) {
    const auto o = as<CosnetCoAttention>(m).forward(x[0], x[1]);
    return {{"out_a", o.out_a},         {"out_b", o.out_b},   {"affinity", o.affinity}, {"weights_a", o.weights_a},
            {"weights_b", o.weights_b}, {"gate_a", o.gate_a}, {"gate_b", o.gate_b}};
}

Make cosnet(int64_t C, CosnetCoAttention::Variant variant) {
    return [=](Generator& g) { return std::make_unique<CosnetCoAttention>(C, variant, g); };
}

Outputs can_run(Module* m, In x, Masks) {
    const auto o = as<CanCrossAttention>(m).forward(x[0], x[1]);
    return {{"P_bar", o.P_bar}, {"Q_bar", o.Q_bar}, {"weights_p", o.weights_p}, {"weights_q", o.weights_q},
            {"correlation", o.correlation}};
}

// Both sentences' key masks: masks[k] covers input k.
KeySet sentence(int k, std::vector<std::string> weights, std::vector<std::string> zero_when_empty) {
    return {.mask = k, .inputs = {k}, .weights = std::move(weights), .zero_when_empty = std::move(zero_when_empty)};
}

// ---- 67–69. ABCNN ------------------------------------------------------------------------------

const RegisterEntry abcnn1_entry(67, "abcnn1_attention", {
    {.variant = "attention feature maps: s 4, d 3, lengths (4, 2) and (3, 4)",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({4, 2}, 4), keep_first({3, 4}, 4)},
     .make = [](Generator& g) { return std::make_unique<AbcnnOneAttention>(4, 3, g); },
     .run = abcnn1_run,
     .reference = abcnn1_attention_reference,
     .masking = {sentence(0, {}, {"weights", "features0", "features1", "channels0"}),
                 sentence(1, {"weights"}, {"weights", "features0", "features1", "channels1"})},
     .properties = {bounded("weights", 0, 1), swapping_transposes({"weights"})}},
    {.variant = "square W_0, W_1 (s = d = 4): a transposed W is shape-valid",
     .inputs = {Shape{2, 4, 4}, Shape{2, 4, 4}},
     .make = [](Generator& g) { return std::make_unique<AbcnnOneAttention>(4, 4, g); },
     .run = abcnn1_run,
     .reference = abcnn1_attention_reference,
     .properties = {swapping_transposes({"weights"})}},
    {.variant = "an ABCNN-1 layer: channels, wide conv w 2 (d′ 2), w-ap; lengths (4, 3) and (2, 4)",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({4, 3}, 4), keep_first({2, 4}, 4)},
     .make = abcnn_layer(AbcnnLayer::Kind::one, 4, 3, 2, 2),
     .run = abcnn_layer_run,
     .reference = abcnn1_layer_reference,
     .masking = {sentence(0, {}, {"input_attention", "out0"}),
                 sentence(1, {"input_attention"}, {"input_attention", "out1"})},
     .properties = {swapping_transposes({"input_attention"})}},
    {.variant = "an ABCNN-1 layer: s 5, d 3, wide conv w 3 to d′ 4, no masks",
     .inputs = {Shape{2, 5, 3}, Shape{2, 5, 3}},
     .make = abcnn_layer(AbcnnLayer::Kind::one, 5, 3, 4, 3),
     .run = abcnn_layer_run,
     .reference = abcnn1_layer_reference},
});

const RegisterEntry abcnn2_entry(68, "abcnn2_attention", {
    {.variant = "attention pooling of conv outputs 5 and 4 of 3, w 2, real rows (5, 3) and (4, 2)",
     .inputs = {Shape{2, 5, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({5, 3}, 5), keep_first({4, 2}, 4)},
     .run = abcnn2_run(2),
     .reference = [](const Ref& r) { return abcnn2_attention_reference(r, 2); },
     .masking = {sentence(0, {"unit0"}, {"weights", "unit0", "unit1", "pooled0", "pooled1"}),
                 sentence(1, {"weights", "unit1"}, {"weights", "unit0", "unit1", "pooled0", "pooled1"})},
     .properties = {bounded("weights", 0, 1), swapping_transposes({"weights"}),
                    swapping_swaps({{"unit0", "unit1"}, {"pooled0", "pooled1"}})}},
    {.variant = "w 3, conv outputs 6 and 4 of 2, no masks",
     .inputs = {Shape{2, 6, 2}, Shape{2, 4, 2}},
     .run = abcnn2_run(3),
     .reference = [](const Ref& r) { return abcnn2_attention_reference(r, 3); }},
    {.variant = "an ABCNN-2 layer: s_0 5 ≠ s_1 4, wide conv w 2 (d′ 2), lengths (5, 3) and (2, 4)",
     .inputs = {Shape{2, 5, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({5, 3}, 5), keep_first({2, 4}, 4)},
     .make = abcnn_layer(AbcnnLayer::Kind::two, 5, 3, 2, 2),
     .run = abcnn_layer_run,
     .reference = abcnn2_layer_reference,
     .masking = {sentence(0, {}, {"pooling_attention", "out0", "out1"}),
                 sentence(1, {}, {"pooling_attention", "out0", "out1"})},
     .properties = {swapping_transposes({"pooling_attention"}), swapping_swaps({{"out0", "out1"}})}},
    {.variant = "an ABCNN-2 layer: wide conv w 3 to d′ 3 = d, no masks",
     .inputs = {Shape{2, 4, 3}, Shape{2, 3, 3}},
     .make = abcnn_layer(AbcnnLayer::Kind::two, 4, 3, 3, 3),
     .run = abcnn_layer_run,
     .reference = abcnn2_layer_reference},
});

const RegisterEntry abcnn3_entry(69, "abcnn3_attention", {
    {.variant = "s 4, d 3, wide conv w 2 to d′ 2, lengths (4, 3) and (2, 4)",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({4, 3}, 4), keep_first({2, 4}, 4)},
     .make = abcnn_layer(AbcnnLayer::Kind::three, 4, 3, 2, 2),
     .run = abcnn_layer_run,
     .reference = abcnn3_attention_reference,
     .masking = {sentence(0, {}, {"input_attention", "pooling_attention", "out0", "out1"}),
                 sentence(1, {"input_attention"}, {"input_attention", "pooling_attention", "out0", "out1"})},
     .properties = {bounded("input_attention", 0, 1), bounded("pooling_attention", 0, 1),
                    swapping_transposes({"input_attention"})}},
    {.variant = "square W_0, W_1 (s = d = 4), wide conv w 3 to d′ 5, no masks",
     .inputs = {Shape{2, 4, 4}, Shape{2, 4, 4}},
     .make = abcnn_layer(AbcnnLayer::Kind::three, 4, 4, 5, 3),
     .run = abcnn_layer_run,
     .reference = abcnn3_attention_reference},
});

// ---- 70. decomposable_attention ------------------------------------------------------------------

const RegisterEntry decomposable_entry(70, "decomposable_attention", {
    {.variant = "ℓ_a 3, ℓ_b 4, d 3, hidden 4, 3 classes, lengths (3, 2) and (4, 3)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({3, 2}, 3), keep_first({4, 3}, 4)},
     .make = decomposable(3, 4, 3, false),
     .run = decomposable_run,
     .reference = [](const Ref& r) { return decomposable_attention_reference(r, false); },
     .masking = {sentence(0, {"weights_b"}, {"weights_a", "weights_b"}),
                 sentence(1, {"weights_a"}, {"weights_a", "weights_b"})},
     .properties = {rows_sum_to_one("weights_a"), rows_sum_to_one("weights_b"),
                    permutation_invariant({0, 1}, {0, 1}, {"logits"})}},
    {.variant = "square F_1, F_2, H_2, H_3 (d = hidden = classes = 4), no masks",
     .inputs = {Shape{2, 3, 4}, Shape{2, 2, 4}},
     .make = decomposable(4, 4, 4, false),
     .run = decomposable_run,
     .reference = [](const Ref& r) { return decomposable_attention_reference(r, false); },
     .properties = {permutation_invariant({0}, {}, {"logits"}), permutation_invariant({1}, {}, {"logits"})}},
    {.variant = "intra-sentence attention, ℓ_a 13, ℓ_b 12: offsets up to ±12, past the shared bucket",
     .inputs = {Shape{2, 13, 2}, Shape{2, 12, 2}},
     .masks = {keep_first({13, 12}, 13), keep_first({12, 10}, 12)},
     .make = decomposable(2, 3, 2, true),
     .run = decomposable_run,
     .reference = [](const Ref& r) { return decomposable_attention_reference(r, true); },
     .masking = {sentence(0, {"weights_b"}, {"weights_a", "weights_b"}),
                 sentence(1, {"weights_a"}, {"weights_a", "weights_b"})},
     .properties = {rows_sum_to_one("weights_a"), rows_sum_to_one("weights_b")}},
    {.variant = "intra-sentence attention, ℓ_a 3, ℓ_b 4, d 2, hidden 3, no masks",
     .inputs = {Shape{2, 3, 2}, Shape{2, 4, 2}},
     .make = decomposable(2, 3, 2, true),
     .run = decomposable_run,
     .reference = [](const Ref& r) { return decomposable_attention_reference(r, true); }},
});

// ---- 71. compositional_de_attention ----------------------------------------------------------------

const RegisterEntry coda_entry(71, "compositional_de_attention", {
    {.variant = "identity F, α 1.5, β 0.5, ℓ_a 3, ℓ_b 4, d 3, lengths (3, 2) and (4, 1)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({3, 2}, 3), keep_first({4, 1}, 4)},
     .run = [](Module*, In x, Masks k) {
         return coda_outputs(compositional_de_attention(x[0], x[1], 1.5, 0.5, k[0], k[1]));
     },
     .reference = [](const Ref& r) { return compositional_de_attention_reference(r, 1.5, 0.5, false); },
     .masking = {sentence(0, {}, {"aligned_a", "aligned_b", "weights"}),
                 sentence(1, {"weights"}, {"aligned_a", "aligned_b", "weights"})},
     .properties = {bounded("weights", -0.5, 0.5)}},
    {.variant = "dense F_E, F_N (3 → 2), α = β = 1, ℓ_a 3, ℓ_b 2",
     .inputs = {Shape{2, 3, 3}, Shape{2, 2, 3}},
     .make = [](Generator& g) { return std::make_unique<CompositionalDeAttention>(3, 2, g); },
     .run = [](Module* m, In x, Masks) { return coda_outputs(as<CompositionalDeAttention>(m).forward(x[0], x[1])); },
     .reference = [](const Ref& r) { return compositional_de_attention_reference(r, 1, 1, true); }},
    {.variant = "square dense F_E, F_N (4 → 4), α 0.7, β 2, lengths (2, 3) and (4, 2)",
     .inputs = {Shape{2, 3, 4}, Shape{2, 4, 4}},
     .masks = {keep_first({2, 3}, 3), keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<CompositionalDeAttention>(4, 4, g, 0.7, 2); },
     .run = [](Module* m, In x, Masks k) {
         return coda_outputs(as<CompositionalDeAttention>(m).forward(x[0], x[1], k[0], k[1]));
     },
     .reference = [](const Ref& r) { return compositional_de_attention_reference(r, 0.7, 2, true); },
     .masking = {sentence(0, {}, {"aligned_a", "aligned_b", "weights"}),
                 sentence(1, {"weights"}, {"aligned_a", "aligned_b", "weights"})},
     .properties = {swapping_transposes({"weights"}), swapping_swaps({{"aligned_a", "aligned_b"}})}},
});

// ---- 72. cosnet_co_attention ---------------------------------------------------------------------

std::vector<Property> cosnet_properties(bool symmetric) {
    std::vector<Property> p = {rows_sum_to_one("weights_a"), rows_sum_to_one("weights_b"),
                               bounded("gate_a", 0, 1), bounded("gate_b", 0, 1),
                               cosnet_convex("out_a", "gate_a", 1), cosnet_convex("out_b", "gate_b", 0)};
    if (symmetric) {
        p.push_back(same_inputs_equal_outputs({{"out_a", "out_b"}, {"weights_a", "weights_b"}}));
        p.push_back(swapping_swaps({{"out_a", "out_b"}, {"weights_a", "weights_b"}}));
    }
    return p;
}

const RegisterEntry cosnet_entry(72, "cosnet_co_attention", {
    {.variant = "vanilla W, C 3, 2×3 frames",
     .inputs = {Shape{2, 3, 2, 3}, Shape{2, 3, 2, 3}},
     .make = cosnet(3, CosnetCoAttention::Variant::vanilla),
     .run = cosnet_run,
     .reference = [](const Ref& r) { return cosnet_co_attention_reference(r, CosnetW::vanilla); },
     .properties = cosnet_properties(false)},
    {.variant = "symmetric W = Pᵀ D P, C 2, 3×2 frames",
     .inputs = {Shape{2, 2, 3, 2}, Shape{2, 2, 3, 2}},
     .make = cosnet(2, CosnetCoAttention::Variant::symmetric),
     .run = cosnet_run,
     .reference = [](const Ref& r) { return cosnet_co_attention_reference(r, CosnetW::symmetric); },
     .properties = cosnet_properties(true)},
    {.variant = "channel-wise W = diag(D), C 3, 2×2 frames",
     .inputs = {Shape{2, 3, 2, 2}, Shape{2, 3, 2, 2}},
     .make = cosnet(3, CosnetCoAttention::Variant::channel),
     .run = cosnet_run,
     .reference = [](const Ref& r) { return cosnet_co_attention_reference(r, CosnetW::channel); },
     .properties = cosnet_properties(true)},
});

// ---- 73. can_cross_attention ---------------------------------------------------------------------

std::vector<Property> can_properties() {
    return {rows_sum_to_one("weights_p"), rows_sum_to_one("weights_q"), bounded("correlation", -1, 1),
            swapping_transposes({"correlation"}),
            swapping_swaps({{"P_bar", "Q_bar"}, {"weights_p", "weights_q"}})};
}

const RegisterEntry can_entry(73, "can_cross_attention", {
    {.variant = "c 3, 2×2 maps (m 4), r 2, τ 0.5",
     .inputs = {Shape{2, 3, 2, 2}, Shape{2, 3, 2, 2}},
     .make = [](Generator& g) { return std::make_unique<CanCrossAttention>(4, 2, g, 0.5); },
     .run = can_run,
     .reference = [](const Ref& r) { return can_cross_attention_reference(r, 0.5); },
     .properties = can_properties()},
    {.variant = "c 2, 2×3 maps (m 6), r 3 (W_1 2×6), the default τ 0.025",
     .inputs = {Shape{2, 2, 2, 3}, Shape{2, 2, 2, 3}},
     .make = [](Generator& g) { return std::make_unique<CanCrossAttention>(6, 3, g); },
     .run = can_run,
     .reference = [](const Ref& r) { return can_cross_attention_reference(r, 0.025); },
     .properties = can_properties()},
    {.variant = "square W_1, W_2 (m 4, r 1): a transposed W is shape-valid, τ 0.3",
     .inputs = {Shape{2, 3, 1, 4}, Shape{2, 3, 1, 4}},
     .make = [](Generator& g) { return std::make_unique<CanCrossAttention>(4, 1, g, 0.3); },
     .run = can_run,
     .reference = [](const Ref& r) { return can_cross_attention_reference(r, 0.3); },
     .properties = can_properties()},
});

}  // namespace

// ---- 67. abcnn1_attention ---------------------------------------------------------------------

TEST_CASE("abcnn1_attention: A((0,0), (3,4)) = 1/6; equal rows give 1; sentences must have the fixed shape") {
    const Var F0(Tensor::from({0, 0, 1, 2}, {1, 2, 2})), F1(Tensor::from({3, 4, 1, 2}, {1, 2, 2}));
    const Tensor A = abcnn_match_scores(F0, F1).value();
    CHECK(std::abs(A.at({0, 0, 0}) - 0.166667) < 1e-6);
    CHECK(std::abs(A.at({0, 1, 1}) - 1) < 1e-6);  // equal rows: 1/(1 + 10⁻⁶) at most 10⁻⁶ away
    CHECK(std::abs(A.at({0, 0, 1}) - 1 / (1 + std::sqrt(5.0))) < 1e-12);
    Generator gen(67);
    AbcnnOneAttention att(4, 3, gen);
    CHECK_THROWS_AS(att.forward(Var(normal({2, 4, 3}, gen)), Var(normal({2, 5, 3}, gen))), std::invalid_argument);
}

// ---- 68. abcnn2_attention ---------------------------------------------------------------------

TEST_CASE("abcnn2_attention: outputs return to s_k; weights forced to 1 give width-w sum pooling") {
    Generator gen(68);
    const Var c0(normal({2, 6, 3}, gen)), c1(normal({2, 4, 3}, gen));  // s_0 = 4, s_1 = 2 with w = 3
    const auto out = abcnn2_attention(c0, c1, 3);
    CHECK(out.pooled0.shape() == Shape{2, 4, 3});
    CHECK(out.pooled1.shape() == Shape{2, 2, 3});
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
    const Tensor m0 = keep_first({5, 3}, 5), m1 = keep_first({4, 5}, 5);
    const auto a = three.forward(F0, F1, m0, m1);
    const auto b = two.forward(F0, F1, m0, m1);
    CHECK(allclose(a.out0.value(), b.out0.value(), 0, 1e-12));
    CHECK(allclose(a.out1.value(), b.out1.value(), 0, 1e-12));
    CHECK(a.out0.shape() == Shape{2, 5, 4});
    CHECK(a.pooling_attention.shape() == Shape{2, 7, 7});
    CHECK(three.id() == "abcnn3_attention");
}

// ---- 70. decomposable_attention ---------------------------------------------------------------

TEST_CASE("decomposable_attention: distance buckets — offsets −10..10 their own, every |i − j| > 10 one more") {
    using D = DecomposableAttention;
    CHECK(D::kDistanceBuckets == 22);
    CHECK(D::distance_bucket(-10) == 0);
    CHECK(D::distance_bucket(0) == 10);
    CHECK(D::distance_bucket(10) == 20);
    for (int64_t far : {11, -11, 12, -40}) CHECK(D::distance_bucket(far) == 21);
}

TEST_CASE("decomposable_attention: with intra-attention the distance biases make word order matter") {
    Generator gen(70);
    const Tensor a = normal({1, 4, 3}, gen), b = normal({1, 3, 3}, gen);
    DecomposableAttention intra(3, 8, 3, gen, /*intra=*/true);
    intra.distance_bias.value().copy_(normal({DecomposableAttention::kDistanceBuckets}, gen));
    const Tensor z = intra.forward(Var(a), Var(b)).logits.value();
    const Tensor z_perm = intra.forward(Var(index_select(a, 1, {2, 0, 3, 1})), Var(b)).logits.value();
    CHECK(!allclose(z, z_perm, 0, 1e-6));
}

// ---- 71. compositional_de_attention -----------------------------------------------------------

TEST_CASE("compositional_de_attention: a (1,0), b (1,0), (0,1) give M = (0.380797, 0); it can subtract") {
    const Var a(Tensor::from({1, 0}, {1, 1, 2})), b(Tensor::from({1, 0, 0, 1}, {1, 2, 2}));
    const auto out = compositional_de_attention(a, b);
    CHECK(std::abs(out.weights.value()[0] - 0.380797) < 1e-6);
    CHECK(out.weights.value()[1] == 0);  // E = 0 ⇒ M = 0
    Generator gen(71);
    const auto r = compositional_de_attention(Var(normal({2, 4, 3}, gen)), Var(normal({2, 5, 3}, gen)), 2, 0.5);
    bool negative = false;
    for (int64_t i = 0; i < r.weights.numel(); ++i) negative = negative || r.weights.value()[i] < 0;
    CHECK(negative);
}

// ---- 72. cosnet_co_attention ------------------------------------------------------------------

TEST_CASE("cosnet_co_attention: a vanilla W breaks Z_a = Z_b for V_a = V_b; frames must match") {
    Generator gen(72);
    CosnetCoAttention vanilla(3, CosnetCoAttention::Variant::vanilla, gen);
    const Var Va(normal({1, 3, 2, 3}, gen));
    const auto same = vanilla.forward(Va, Va);
    CHECK(!allclose(same.out_a.value(), same.out_b.value(), 0, 1e-6));
    CHECK_THROWS_AS(vanilla.forward(Va, Var(normal({1, 3, 3, 2}, gen))), std::invalid_argument);
}

// ---- 73. can_cross_attention ------------------------------------------------------------------

TEST_CASE("can_cross_attention: W_2 = 0 gives P̄ = (1 + 1/m) P; mismatched features throw") {
    Generator gen(73);
    CanCrossAttention can(6, 3, gen);
    const Var P(normal({2, 4, 2, 3}, gen)), Q(normal({2, 4, 2, 3}, gen));
    can.W_2.value().fill_(0);
    CHECK(allclose(can.forward(P, Q).P_bar.value(), mul(P.value(), Tensor::scalar(1 + 1.0 / 6)), 0, 1e-12));
    CHECK_THROWS_AS(can.forward(P, Var(normal({2, 4, 3, 3}, gen))), std::invalid_argument);
}
