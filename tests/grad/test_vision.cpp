// CNN / vision attention, catalog entries 61–66 (attention/vision.hpp): the
// registry entries (tests/grad/catalog.hpp), whose independent references are
// in test_vision_reference.cpp, and the catalog's special values and
// hand-computed examples in double precision.
//
// Every case's feature map is B×C×H×W with H ≠ W and C equal to neither, so a
// swapped axis is a shape error or a wrong value, never silent.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/vision.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/test_vision_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- inputs and properties of the registry cases ------------------------------------------

// A fixed shuffle of 0 … n−1 that moves something.
std::vector<int64_t> shuffle(int64_t n) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    Generator gen(606);
    for (int64_t i = n - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(gen.randint(uint64_t(i + 1)))]);
    if (std::is_sorted(perm.begin(), perm.end())) std::rotate(perm.begin(), perm.begin() + 1, perm.end());
    return perm;
}

// out[b, perm[i], rest] = x[b, i, rest]: axis 1 permuted (channels of a map, or of gates).
Tensor permute_axis1(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t B = x.size(0), n = x.size(1), inner = x.numel() / (B * n);
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) out[(b * n + perm[size_t(i)]) * inner + k] = x[(b * n + i) * inner + k];
    return out;
}

// out[b, c, perm[p]] = x[b, c, p] over the N = H·W pixels of a B×C×H×W map.
Tensor permute_pixels(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t planes = x.size(0) * x.size(1), N = x.numel() / planes;
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t q = 0; q < planes; ++q)
        for (int64_t p = 0; p < N; ++p) out[q * N + perm[size_t(p)]] = x[q * N + p];
    return out;
}

// out[b, perm[j], perm[i]] = S[b, j, i]: a B×n×n matrix permuted on both axes.
Tensor permute_both(const Tensor& S, const std::vector<int64_t>& perm) {
    const int64_t B = S.size(0), n = S.size(1);
    Tensor out = Tensor::zeros(S.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < n; ++i)
                out[(b * n + perm[size_t(j)]) * n + perm[size_t(i)]] = S[(b * n + j) * n + i];
    return out;
}

// Permuting input 0 with `move` (pixels or channels): the outputs named in
// `moved` move the same way, `fixed` stay, `both_axes` (B×n×n) move on both axes.
Property permutes_with(const std::string& what, Tensor (*move)(const Tensor&, const std::vector<int64_t>&),
                       int64_t (*count)(const Tensor&), std::vector<std::string> moved,
                       std::vector<std::string> fixed, std::vector<std::string> both_axes) {
    return {"permuting the " + what + " of the input permutes the outputs alike",
            [=](const PropertyContext& c) -> std::string {
                const std::vector<int64_t> perm = shuffle(count(c.inputs[0]));
                std::vector<Tensor> x = c.inputs;
                x[0] = move(x[0], perm);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                std::string err;
                for (const std::string& n : moved)
                    if (err.empty())
                        err = differs(n + " with the " + what + " permuted", move(before[n], perm), after[n]);
                for (const std::string& n : fixed)
                    if (err.empty()) err = differs(n + " with the " + what + " permuted", before[n], after[n]);
                for (const std::string& n : both_axes)
                    if (err.empty())
                        err = differs(n + " with the " + what + " permuted", permute_both(before[n], perm), after[n]);
                return err;
            }};
}
int64_t pixel_count(const Tensor& x) { return x.size(2) * x.size(3); }
int64_t channel_count(const Tensor& x) { return x.size(1); }

Property pixels_permute(std::vector<std::string> moved, std::vector<std::string> fixed,
                        std::vector<std::string> both_axes = {}) {
    return permutes_with("pixels", permute_pixels, pixel_count, std::move(moved), std::move(fixed),
                         std::move(both_axes));
}
Property channels_permute(std::vector<std::string> moved, std::vector<std::string> fixed,
                          std::vector<std::string> both_axes = {}) {
    return permutes_with("channels", permute_axis1, channel_count, std::move(moved), std::move(fixed),
                         std::move(both_axes));
}

// Every row of a B×D descriptor has L2 norm 1.
Property unit_norm(const std::string& output) {
    return {output + " has unit norm", [output](const PropertyContext& c) -> std::string {
                const Array f(c.run(c.inputs, c.masks)[output]);
                for (int64_t b = 0; b < f.size(0); ++b)
                    if (std::abs(norm(row(f, b)) - 1) > 1e-9)
                        return output + " row " + std::to_string(b) + " has norm " + std::to_string(norm(row(f, b)));
                return "";
            }};
}

// ---- the registry entries ---------------------------------------------------------------------

template <class M>
Run forward_of() {
    return [](Module* m, In x, Masks) { return output_and_weights(as<M>(m).forward(x[0])); };
}

const RegisterEntry squeeze_excitation_entry(61, "squeeze_excitation", {
    {.variant = "C 6, r 2 (3 hidden), 3×4 maps, biases",
     .inputs = {Shape{2, 6, 3, 4}},
     .make = [](Generator& g) { return std::make_unique<SqueezeExcitation>(6, 2, g); },
     .run = forward_of<SqueezeExcitation>(),
     .reference = [](const Ref& r) { return squeeze_excitation_reference(r, 2, true); },
     .properties = {bounded("weights", 0, 1), pixels_permute({"output"}, {"weights"})}},
    {.variant = "no biases (the paper's notation), C 5, r 2 (2 hidden), 4×3 maps",
     .inputs = {Shape{2, 5, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<SqueezeExcitation>(5, 2, g, false); },
     .run = forward_of<SqueezeExcitation>(),
     .reference = [](const Ref& r) { return squeeze_excitation_reference(r, 2, false); }},
    {.variant = "r 1: square W_1 and W_2 (5×5), where a transposed weight is shape-valid; 2×3 maps",
     .inputs = {Shape{3, 5, 2, 3}},
     .make = [](Generator& g) { return std::make_unique<SqueezeExcitation>(5, 1, g); },
     .run = forward_of<SqueezeExcitation>(),
     .reference = [](const Ref& r) { return squeeze_excitation_reference(r, 1, true); }},
});

const RegisterEntry cbam_channel_entry(62, "cbam_channel_attention", {
    {.variant = "C 6, r 3 (2 hidden), 4×3 maps, mean and max branches, biases",
     .inputs = {Shape{2, 6, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<CbamChannelAttention>(6, 3, g); },
     .run = forward_of<CbamChannelAttention>(),
     .reference = [](const Ref& r) { return cbam_channel_attention_reference(r, 3, true, true); },
     .properties = {bounded("weights", 0, 1), pixels_permute({"output"}, {"weights"})},
     .draw = distinct({Shape{2, 6, 4, 3}})},
    {.variant = "the mean branch only (entry 61's gate), C 5, r 2, 3×4 maps",
     .inputs = {Shape{2, 5, 3, 4}},
     .make = [](Generator& g) { return std::make_unique<CbamChannelAttention>(5, 2, g, true, false); },
     .run = forward_of<CbamChannelAttention>(),
     .reference = [](const Ref& r) { return cbam_channel_attention_reference(r, 2, true, false); }},
    {.variant = "r 1: square MLP (4×4), no biases, 3×2 maps",
     .inputs = {Shape{2, 4, 3, 2}},
     .make = [](Generator& g) { return std::make_unique<CbamChannelAttention>(4, 1, g, false); },
     .run = forward_of<CbamChannelAttention>(),
     .reference = [](const Ref& r) { return cbam_channel_attention_reference(r, 1, false, true); },
     .draw = distinct({Shape{2, 4, 3, 2}})},
});

const RegisterEntry cbam_spatial_entry(63, "cbam_spatial_attention", {
    {.variant = "7×7 kernel on 5×4 maps (the padding reaches past every edge), C 3",
     .inputs = {Shape{2, 3, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g); },
     .run = forward_of<CbamSpatialAttention>(),
     .reference = [](const Ref& r) { return cbam_spatial_attention_reference(r, 7, true); },
     .properties = {bounded("weights", 0, 1), channels_permute({"output"}, {"weights"})},
     .draw = distinct({Shape{2, 3, 5, 4}})},
    {.variant = "3×3 kernel without bias, 4×6 maps, C 5",
     .inputs = {Shape{2, 5, 4, 6}},
     .make = [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g, 3, false); },
     .run = forward_of<CbamSpatialAttention>(),
     .reference = [](const Ref& r) { return cbam_spatial_attention_reference(r, 3, false); },
     .draw = distinct({Shape{2, 5, 4, 6}})},
    {.variant = "5×5 kernel on 7×6 maps (interior pixels see the whole kernel), C 2",
     .inputs = {Shape{2, 2, 7, 6}},
     .make = [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g, 5); },
     .run = forward_of<CbamSpatialAttention>(),
     .reference = [](const Ref& r) { return cbam_spatial_attention_reference(r, 5, true); },
     .draw = distinct({Shape{2, 2, 7, 6}})},
    {.variant = "the full CBAM block: entry 62 (C 4, r 2), then this with a 7×7 kernel; 3×5 maps",
     .inputs = {Shape{2, 4, 3, 5}},
     .make = [](Generator& g) { return std::make_unique<Cbam>(4, 2, g); },
     .run = [](Module* m, In x, Masks) {
         const CbamOutput o = as<Cbam>(m).forward(x[0]);
         return Outputs{{"output", o.output}, {"channel_gates", o.channel_gates}, {"spatial_map", o.spatial_map}};
     },
     .reference = [](const Ref& r) { return cbam_block_reference(r, 2, 7); },
     .draw = distinct({Shape{2, 4, 3, 5}})},
});

Case position_case(std::string variant, Shape shape, int64_t reduction, std::vector<Property> properties = {}) {
    const int64_t C = shape[1];
    return {.variant = std::move(variant),
            .inputs = {shape},
            .make = [=](Generator& g) { return std::make_unique<DanetPositionAttention>(C, g, reduction); },
            .run = forward_of<DanetPositionAttention>(),
            .reference = [=](const Ref& r) { return danet_position_attention_reference(r, reduction); },
            .properties = std::move(properties)};
}

Case identity_at_initialisation() {
    Case c = position_case("α = 0 as initialised: the identity; C 3 < reduction 8 (C' = 1), 2×4 maps",
                           Shape{2, 3, 2, 4}, 8);
    c.randomize_parameters = false;
    return c;
}

const RegisterEntry danet_position_entry(64, "danet_position_attention", {
    position_case("C 8 (C/8 = 1), 2×3 maps", Shape{2, 8, 2, 3}, 8,
                  {rows_sum_to_one("weights"), pixels_permute({"output"}, {}, {"weights"})}),
    position_case("C 6, reduction 2 (C' = 3), 3×2 maps", Shape{2, 6, 3, 2}, 2,
                  {rows_sum_to_one("weights"), pixels_permute({"output"}, {}, {"weights"})}),
    position_case("reduction 1: square query and key convolutions (5×5), 2×4 maps", Shape{2, 5, 2, 4}, 1),
    identity_at_initialisation(),
});

template <DanetChannelAttention::EnergyMode mode>
std::unique_ptr<Module> make_cam(Generator&) {
    return std::make_unique<DanetChannelAttention>(mode);
}
constexpr auto kPaper = DanetChannelAttention::EnergyMode::paper;
constexpr auto kReleased = DanetChannelAttention::EnergyMode::released_code;

// Energies are sums over N pixels: 0.5·N(0, 1) keeps the softmax away from one-hot.
const RegisterEntry danet_channel_entry(65, "danet_channel_attention", {
    {.variant = "the paper's energy, C 4, 3×2 maps",
     .inputs = {Shape{2, 4, 3, 2}},
     .make = make_cam<kPaper>,
     .run = forward_of<DanetChannelAttention>(),
     .reference = [](const Ref& r) { return danet_channel_attention_reference(r, false); },
     .properties = {rows_sum_to_one("weights"), channels_permute({"output"}, {}, {"weights"})},
     .draw = distinct({Shape{2, 4, 3, 2}}, 0.5)},
    {.variant = "the released code's energy max − A_i·A_j, C 4, 3×2 maps",
     .inputs = {Shape{2, 4, 3, 2}},
     .make = make_cam<kReleased>,
     .run = forward_of<DanetChannelAttention>(),
     .reference = [](const Ref& r) { return danet_channel_attention_reference(r, true); },
     .properties = {rows_sum_to_one("weights"), channels_permute({"output"}, {}, {"weights"})},
     .draw = distinct({Shape{2, 4, 3, 2}}, 0.5)},
    {.variant = "the paper's energy, C 3, 2×4 maps, batch 3",
     .inputs = {Shape{3, 3, 2, 4}},
     .make = make_cam<kPaper>,
     .run = forward_of<DanetChannelAttention>(),
     .reference = [](const Ref& r) { return danet_channel_attention_reference(r, false); },
     .draw = distinct({Shape{3, 3, 2, 4}}, 0.5)},
});

Make make_pyramid(int64_t C, int64_t hidden, std::vector<int64_t> levels, int64_t cascade, PyramidAggregate how) {
    return [=](Generator& g) {
        return std::make_unique<PyramidAggregationAttention>(C, hidden, g, levels, cascade, how);
    };
}

const RegisterEntry pyramid_entry(66, "pyramid_aggregation_attention", {
    {.variant = "levels {1, 2}, sum, C 3, hidden 2, 4×5 maps",
     .inputs = {Shape{2, 3, 4, 5}},
     .make = make_pyramid(3, 2, {1, 2}, 1, PyramidAggregate::sum),
     .run = forward_of<PyramidAggregationAttention>(),
     .reference = [](const Ref& r) { return pyramid_aggregation_attention_reference(r, 1, 2, {1, 2}, false); },
     .properties = {bounded("weights", 0, 1), unit_norm("output")}},
    {.variant = "levels {1, 3}, concat, a cascade of 2, C 2, hidden 3, 3×5 maps (overlapping bins)",
     .inputs = {Shape{2, 2, 3, 5}},
     .make = make_pyramid(2, 3, {1, 3}, 2, PyramidAggregate::concat),
     .run = forward_of<PyramidAggregationAttention>(),
     .reference = [](const Ref& r) { return pyramid_aggregation_attention_reference(r, 2, 3, {1, 3}, true); },
     .properties = {bounded("weights", 0, 1), unit_norm("output")}},
    {.variant = "levels {3, 2}, sum, a cascade of 3, square 1×1 convs (C = hidden = 4), 5×7 maps",
     .inputs = {Shape{2, 4, 5, 7}},
     .make = make_pyramid(4, 4, {3, 2}, 3, PyramidAggregate::sum),
     .run = forward_of<PyramidAggregationAttention>(),
     .reference = [](const Ref& r) { return pyramid_aggregation_attention_reference(r, 3, 4, {3, 2}, false); }},
    {.variant = "the aggregation alone on a given map, levels {2, 3}, concat, C 3, 5×4 maps",
     .inputs = {Shape{2, 3, 5, 4}, Shape{2, 5, 4}},
     .run = [](Module*, In x, Masks) {
         return Outputs{{"output", pyramid_aggregation(x[0], x[1], {2, 3}, PyramidAggregate::concat)}};
     },
     .reference = [](const Ref& r) {
         return std::vector<Expected>{{"output", pyramid_aggregate_reference(r.x[0], r.x[1], {2, 3}, true)}};
     },
     .properties = {unit_norm("output")}},
});

// ---- the hand-computed tests -------------------------------------------------------------------

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
