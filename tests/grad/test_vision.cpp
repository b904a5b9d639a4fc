// CNN / vision attention, catalog entries 61–66 (attention/vision.hpp): the
// catalog's special values and hand-computed examples in double precision.
// The registry entries and their independent references, which check every
// value, gradient and permutation property, are in test_vision_reference.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "attention/vision.hpp"
#include "tensor/ops.hpp"

using namespace attn;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

}  // namespace

// ---- 61. squeeze_excitation -------------------------------------------------------------------

TEST_CASE("squeeze_excitation: W_2 = 0 gives 0.5·U; bad channels throw") {
    Generator gen(61);
    SqueezeExcitation se(8, 4, gen);
    const Tensor U = normal({2, 8, 3, 4}, gen);
    CHECK(se.forward(Var(U)).weights.shape() == Shape{2, 8});

    se.fc2.weight.value().fill_(0);
    se.fc2.bias.value().fill_(0);
    CHECK(allclose(se.forward(Var(U)).output.value(), mul(U, real(0.5)), 0, 1e-15));

    CHECK_THROWS_WITH_AS(se.forward(Var(normal({2, 3, 3, 4}, gen))),
                         doctest::Contains("squeeze_excitation: feature map 2×3×3×4"), std::invalid_argument);
    CHECK(se.taxonomy().dimensionality == "multi");
}

// ---- 62. cbam_channel_attention -----------------------------------------------------------------

TEST_CASE("cbam_channel_attention: a zero MLP gives gates 0.5; without the max branch it is SE's gate") {
    Generator gen(62);
    CbamChannelAttention cbam(6, 2, gen);
    const Tensor F = normal({2, 6, 4, 3}, gen);

    // Without the max branch and with the same weights: entry 61.
    CbamChannelAttention mean_only(6, 2, gen, true, /*use_max=*/false);
    SqueezeExcitation se(6, 2, gen);
    for (auto* m : std::vector<Module*>{&mean_only, &se}) m->load_state_dict(cbam.state_dict());
    const Tensor gate = mean_only.forward(Var(F)).weights.value();
    CHECK(allclose(gate, se.forward(Var(F)).weights.value(), 0, 1e-15));
    // With the max branch the gate differs.
    CHECK_FALSE(allclose(gate, cbam.forward(Var(F)).weights.value(), 0, 1e-3));

    cbam.fc2.weight.value().fill_(0);
    cbam.fc2.bias.value().fill_(0);
    const AttentionOutput out = cbam.forward(Var(F));
    CHECK(allclose(out.weights.value(), Tensor::full({2, 6}, 0.5), 0, 1e-15));
    CHECK(allclose(out.output.value(), mul(F, real(0.5)), 0, 1e-15));
}

// ---- 63. cbam_spatial_attention -----------------------------------------------------------------

TEST_CASE("cbam_spatial_attention: zero kernel gives 0.5; H, W kept for odd and even sizes; even kernels throw") {
    Generator gen(63);
    CbamSpatialAttention spatial(gen);
    CHECK(spatial.conv.weight.shape() == Shape{1, 2, 7, 7});
    for (const Shape& s : {Shape{2, 5, 7, 7}, Shape{1, 3, 4, 6}, Shape{2, 4, 9, 2}}) {
        const Tensor F = normal(s, gen);
        const AttentionOutput out = spatial.forward(Var(F));
        CHECK(out.output.shape() == s);
        CHECK(out.weights.shape() == Shape{s[0], 1, s[2], s[3]});
    }
    spatial.conv.weight.value().fill_(0);
    spatial.conv.bias.value().fill_(0);
    CHECK(allclose(spatial.forward(Var(normal({1, 3, 5, 4}, gen))).weights.value(), Tensor::full({1, 1, 5, 4}, 0.5), 0,
                   1e-15));
    CHECK_THROWS_AS(CbamSpatialAttention(gen, 4), std::invalid_argument);
}

// ---- 64. danet_position_attention ---------------------------------------------------------------

TEST_CASE("danet_position_attention: α = 0 (as initialised) is exactly the identity; S is N×N") {
    Generator gen(64);
    DanetPositionAttention pam(16, gen);
    const Tensor A = normal({2, 16, 3, 3}, gen);
    const AttentionOutput out = pam.forward(Var(A));
    CHECK(pam.alpha.item() == 0);
    CHECK(allclose(out.output.value(), A, 0, 0));
    CHECK(out.weights.shape() == Shape{2, 9, 9});
}

// ---- 65. danet_channel_attention ----------------------------------------------------------------

TEST_CASE("danet_channel_attention: β = 0 (as initialised) is exactly the identity; X is C×C") {
    Generator gen(65);
    for (auto mode : {DanetChannelAttention::EnergyMode::paper, DanetChannelAttention::EnergyMode::released_code}) {
        DanetChannelAttention cam(mode);
        const Tensor A = normal({2, 5, 3, 2}, gen);
        const AttentionOutput out = cam.forward(Var(A));
        CHECK(allclose(out.output.value(), A, 0, 0));
        CHECK(out.weights.shape() == Shape{2, 5, 5});
    }
}

TEST_CASE("danet_channel_attention: the paper prefers similar channels, the released code the least similar") {
    // Channels (1, 0), (0.9, 0.1) and (−1, 0) over N = 2 pixels (H 1, W 2).
    const Var A(Tensor::from({1, 0, 0.9, 0.1, -1, 0}, {1, 3, 1, 2}));
    const Tensor paper = DanetChannelAttention().forward(A).weights.value();
    const Tensor released =
        DanetChannelAttention(DanetChannelAttention::EnergyMode::released_code).forward(A).weights.value();
    // Row 0: energies A_0·A_i = (1, 0.9, −1). Paper: softmax(e); released: softmax(max e − e) = softmax(−e).
    const real e[3] = {1, 0.9, -1};
    real zp = 0, zr = 0;
    for (real v : e) zp += std::exp(v), zr += std::exp(-v);
    for (int i = 0; i < 3; ++i) {
        CHECK(std::abs(paper[i] - std::exp(e[i]) / zp) <= 1e-12);
        CHECK(std::abs(released[i] - std::exp(-e[i]) / zr) <= 1e-12);
    }
    CHECK(paper[0] > paper[2]);
    CHECK(released[0] < released[2]);
}

// ---- 66. pyramid_aggregation_attention ----------------------------------------------------------

TEST_CASE("pyramid_aggregation_attention: 𝒜 ≡ 1 at level {1} is normalised global sum pooling") {
    Generator gen(66);
    const Tensor U = normal({2, 3, 4, 5}, gen);
    const Tensor got = pyramid_aggregation(Var(U), Var(Tensor::ones({2, 4, 5})), {1}).value();
    const Tensor total = sum(U, std::vector<int>{2, 3});
    for (int64_t b = 0; b < 2; ++b) {
        real norm = 0;
        for (int64_t c = 0; c < 3; ++c) norm += total[b * 3 + c] * total[b * 3 + c];
        for (int64_t c = 0; c < 3; ++c) CHECK(std::abs(got[b * 3 + c] - total[b * 3 + c] / std::sqrt(norm)) <= 1e-6);
    }
}

TEST_CASE("pyramid_aggregation_attention: the descriptor's size does not depend on H or W; unit norm; map in (0, 1)") {
    Generator gen(67);
    PyramidAggregationAttention sum_pool(4, 3, gen);
    PyramidAggregationAttention cat_pool(4, 3, gen, {1, 2, 3}, 2, PyramidAggregate::concat);
    for (const Shape& s : {Shape{2, 4, 13, 13}, Shape{2, 4, 10, 7}, Shape{2, 4, 3, 3}}) {
        const Var U(normal(s, gen));
        const AttentionOutput a = sum_pool.forward(U), c = cat_pool.forward(U);
        CHECK(a.output.shape() == Shape{2, 4});
        CHECK(c.output.shape() == Shape{2, 4 * (1 + 4 + 9)});
        CHECK(a.weights.shape() == Shape{2, s[2], s[3]});
        for (const Tensor& f : {a.output.value(), c.output.value()}) {
            const Tensor norms = sum(square(f), 1);
            for (int64_t b = 0; b < 2; ++b) CHECK(std::abs(norms[b] - 1) <= 1e-9);
        }
        for (int64_t i = 0; i < a.weights.numel(); ++i) {
            CHECK(a.weights.value()[i] > 0);
            CHECK(a.weights.value()[i] < 1);
        }
    }
    CHECK_THROWS_WITH_AS(sum_pool.forward(Var(normal({1, 4, 2, 2}, gen))), doctest::Contains("level 3"),
                         std::invalid_argument);
}
