// CNN / vision attention, catalog entries 61–66 (attention/vision.hpp):
// gradient-check cases in the attention registry, and each entry's property
// tests in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "attention/vision.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


const RegisterMechanisms vision_cases({
    {"squeeze_excitation",
     "C 4, r 2, 3×3 maps",
     {Shape{2, 4, 3, 3}},
     [](Generator& g) { return std::make_unique<SqueezeExcitation>(4, 2, g); },
     [](Module* m, const std::vector<Var>& x) { return both(as<SqueezeExcitation>(m).forward(x[0])); }},
    {"cbam_channel_attention",
     "C 4, r 2, 3×2 maps, mean and max branches",
     {Shape{2, 4, 3, 2}},
     [](Generator& g) { return std::make_unique<CbamChannelAttention>(4, 2, g); },
     [](Module* m, const std::vector<Var>& x) { return both(as<CbamChannelAttention>(m).forward(x[0])); }},
    {"cbam_spatial_attention",
     "C 3, 3×3 kernel, 4×3 maps",
     {Shape{2, 3, 4, 3}},
     [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g, 3); },
     [](Module* m, const std::vector<Var>& x) { return both(as<CbamSpatialAttention>(m).forward(x[0])); }},
    {"cbam_spatial_attention",
     "the full CBAM block (channel then spatial), 7×7 kernel",
     {Shape{1, 4, 3, 3}},
     [](Generator& g) { return std::make_unique<Cbam>(4, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         const CbamOutput o = as<Cbam>(m).forward(x[0]);
         return concat({flat(o.output), flat(o.channel_gates), flat(o.spatial_map)}, 0);
     }},
    {"danet_position_attention",
     "C 8 (C/8 = 1), 2×3 maps, α = 0.7",
     {Shape{2, 8, 2, 3}},
     [](Generator& g) {
         auto m = std::make_unique<DanetPositionAttention>(8, g);
         m->alpha.value().fill_(0.7);
         return m;
     },
     [](Module* m, const std::vector<Var>& x) { return both(as<DanetPositionAttention>(m).forward(x[0])); }},
    {"danet_channel_attention",
     "paper energy, C 3, 2×2 maps, β = 0.6",
     {Shape{2, 3, 2, 2}},
     [](Generator&) {
         auto m = std::make_unique<DanetChannelAttention>();
         m->beta.value().fill_(0.6);
         return m;
     },
     [](Module* m, const std::vector<Var>& x) { return both(as<DanetChannelAttention>(m).forward(x[0])); }},
    {"danet_channel_attention",
     "released-code energy, C 3, 2×2 maps, β = 0.6",
     {Shape{2, 3, 2, 2}},
     [](Generator&) {
         auto m = std::make_unique<DanetChannelAttention>(DanetChannelAttention::EnergyMode::released_code);
         m->beta.value().fill_(0.6);
         return m;
     },
     [](Module* m, const std::vector<Var>& x) { return both(as<DanetChannelAttention>(m).forward(x[0])); }},
    {"pyramid_aggregation_attention",
     "levels {1, 2}, sum, C 3, 4×5 maps",
     {Shape{2, 3, 4, 5}},
     [](Generator& g) {
         return std::make_unique<PyramidAggregationAttention>(3, 2, g, std::vector<int64_t>{1, 2});
     },
     [](Module* m, const std::vector<Var>& x) { return both(as<PyramidAggregationAttention>(m).forward(x[0])); }},
    {"pyramid_aggregation_attention",
     "levels {1, 3}, concat, a cascade of 2 blocks, 3×3 maps",
     {Shape{1, 2, 3, 3}},
     [](Generator& g) {
         return std::make_unique<PyramidAggregationAttention>(2, 3, g, std::vector<int64_t>{1, 3}, 2,
                                                              PyramidAggregate::concat);
     },
     [](Module* m, const std::vector<Var>& x) { return both(as<PyramidAggregationAttention>(m).forward(x[0])); }},
});

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

// out[b, c, perm[p]] = in[b, c, p]: the same pixel permutation in every channel.
Tensor permute_pixels(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t planes = x.size(0) * x.size(1), N = x.size(2) * x.size(3);
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t q = 0; q < planes; ++q)
        for (int64_t p = 0; p < N; ++p) out[q * N + perm[static_cast<size_t>(p)]] = x[q * N + p];
    return out;
}

// out[b, perm[c]] = in[b, c]: the channels reordered.
Tensor permute_channels(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t B = x.size(0), C = x.size(1), N = x.size(2) * x.size(3);
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t p = 0; p < N; ++p) out[(b * C + perm[static_cast<size_t>(c)]) * N + p] = x[(b * C + c) * N + p];
    return out;
}

std::vector<int64_t> shuffled(int64_t n, Generator& gen) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = n - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(gen.randint(static_cast<uint64_t>(i + 1)))]);
    return perm;
}

void check_rows_sum_to_one(const Tensor& w) {
    const int64_t cols = w.size(-1), rows = w.numel() / cols;
    for (int64_t r = 0; r < rows; ++r) {
        real s = 0;
        for (int64_t j = 0; j < cols; ++j) s += w[r * cols + j];
        CHECK(std::abs(s - 1) <= 1e-12);
    }
}

}  // namespace

// ---- 61. squeeze_excitation -------------------------------------------------------------------

TEST_CASE("squeeze_excitation: W_2 = 0 gives 0.5·U; equivariant to pixel permutations; bad channels throw") {
    Generator gen(61);
    SqueezeExcitation se(8, 4, gen);
    const Tensor U = normal({2, 8, 3, 4}, gen);

    const AttentionOutput out = se.forward(Var(U));
    CHECK(out.weights.shape() == Shape{2, 8});
    const auto perm = shuffled(12, gen);
    const Tensor moved = se.forward(Var(permute_pixels(U, perm))).output.value();
    CHECK(allclose(moved, permute_pixels(out.output.value(), perm), 0, 1e-12));

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

TEST_CASE("cbam_spatial_attention: channel permutations leave M_s unchanged; zero kernel gives 0.5; H, W kept") {
    Generator gen(63);
    CbamSpatialAttention spatial(gen);
    CHECK(spatial.conv.weight.shape() == Shape{1, 2, 7, 7});
    for (const Shape& s : {Shape{2, 5, 7, 7}, Shape{1, 3, 4, 6}, Shape{2, 4, 9, 2}}) {
        const Tensor F = normal(s, gen);
        const AttentionOutput out = spatial.forward(Var(F));
        CHECK(out.output.shape() == s);
        CHECK(out.weights.shape() == Shape{s[0], 1, s[2], s[3]});
        const Tensor map = spatial.forward(Var(permute_channels(F, shuffled(s[1], gen)))).weights.value();
        CHECK(allclose(map, out.weights.value(), 0, 1e-12));
    }
    spatial.conv.weight.value().fill_(0);
    spatial.conv.bias.value().fill_(0);
    CHECK(allclose(spatial.forward(Var(normal({1, 3, 5, 4}, gen))).weights.value(), Tensor::full({1, 1, 5, 4}, 0.5), 0,
                   1e-15));
    CHECK_THROWS_AS(CbamSpatialAttention(gen, 4), std::invalid_argument);
}

// ---- 64. danet_position_attention ---------------------------------------------------------------

TEST_CASE("danet_position_attention: α = 0 is the identity; rows of S sum to 1; equivariant to pixel permutations") {
    Generator gen(64);
    DanetPositionAttention pam(16, gen);
    const Tensor A = normal({2, 16, 3, 3}, gen);

    AttentionOutput out = pam.forward(Var(A));
    CHECK(pam.alpha.item() == 0);
    CHECK(allclose(out.output.value(), A, 0, 0));
    CHECK(out.weights.shape() == Shape{2, 9, 9});
    check_rows_sum_to_one(out.weights.value());

    pam.alpha.value().fill_(0.8);
    out = pam.forward(Var(A));
    CHECK_FALSE(allclose(out.output.value(), A, 0, 1e-3));
    const auto perm = shuffled(9, gen);
    const Tensor moved = pam.forward(Var(permute_pixels(A, perm))).output.value();
    CHECK(allclose(moved, permute_pixels(out.output.value(), perm), 0, 1e-12));
}

// ---- 65. danet_channel_attention ----------------------------------------------------------------

TEST_CASE("danet_channel_attention: β = 0 is the identity; rows of X sum to 1; equivariant to channel permutations") {
    Generator gen(65);
    DanetChannelAttention cam;
    const Tensor A = mul(normal({2, 5, 3, 2}, gen), real(0.5));

    AttentionOutput out = cam.forward(Var(A));
    CHECK(allclose(out.output.value(), A, 0, 0));
    CHECK(out.weights.shape() == Shape{2, 5, 5});
    check_rows_sum_to_one(out.weights.value());

    cam.beta.value().fill_(0.6);
    out = cam.forward(Var(A));
    const auto perm = shuffled(5, gen);
    const Tensor moved = cam.forward(Var(permute_channels(A, perm))).output.value();
    CHECK(allclose(moved, permute_channels(out.output.value(), perm), 0, 1e-12));
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
