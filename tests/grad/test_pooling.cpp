// Pooling, set functions and gating, catalog entries 74–80 (attention/pooling.hpp):
// gradient-check cases in the attention registry, and each entry's property
// tests in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "attention/pooling.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


const RegisterMechanisms pooling_cases({
    {"sum_mean_max_pooling",
     "n 4 of 3, lengths 4, 2 and 0",
     {Shape{3, 4, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         const SumMeanMaxPooled p = sum_mean_max_pooling(x[0], length_mask({4, 2, 0}, 4));
         return concat({flat(p.sum), flat(p.mean), flat(p.max)}, 0);
     }},
    {"k_max_pooling",
     "k 3, n 5 of 2, lengths 5 and 2 (zero-padded)",
     {Shape{2, 5, 2}},
     nullptr,
     [](Module*, const std::vector<Var>& x) { return flat(k_max_pooling(x[0], 3, length_mask({5, 2}, 5))); }},
    {"chunk_max_pooling",
     "3 chunks of n 7, lengths 7 and 4",
     {Shape{2, 7, 2}},
     nullptr,
     [](Module*, const std::vector<Var>& x) { return flat(chunk_max_pooling(x[0], 3, length_mask({7, 4}, 7))); }},
    {"chunk_max_pooling",
     "boundaries (0, 1, 4, 6)",
     {Shape{2, 6, 2}},
     nullptr,
     [](Module*, const std::vector<Var>& x) { return flat(chunk_max_pooling(x[0], std::vector<int64_t>{0, 1, 4, 6})); }},
    {"stochastic_pooling",
     "test mode (probability-weighted), 2×2 windows, stride 1, of exp(x)",
     {Shape{2, 2, 3, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         Generator unused(0);
         return flat(stochastic_pooling(exp(x[0]), 2, 1, unused, /*training=*/false));
     }},
    {"stochastic_pooling",
     "training mode with a fixed sample (seed 77), 2×2 windows of exp(x)",
     {Shape{1, 2, 4, 4}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         Generator fixed(77);  // the same draws at every evaluation
         return flat(stochastic_pooling(exp(x[0]), 2, 0, fixed, /*training=*/true));
     }},
    {"spatial_pyramid_pooling",
     "levels {1, 2, 3}, C 2, 5×4 maps",
     {Shape{2, 2, 5, 4}},
     nullptr,
     [](Module*, const std::vector<Var>& x) { return spatial_pyramid_pooling(x[0], {1, 2, 3}); }},
    {"deep_sets_pooling",
     "sum, n 4 of 3, lengths 4 and 2",
     {Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<DeepSetsPooling>(3, 4, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return flat(as<DeepSetsPooling>(m).forward(x[0], length_mask({4, 2}, 4)));
     }},
    {"deep_sets_pooling",
     "max (PointNet), n 4 of 3",
     {Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<DeepSetsPooling>(3, 4, 2, g, SetAggregate::max); },
     [](Module* m, const std::vector<Var>& x) { return flat(as<DeepSetsPooling>(m).forward(x[0])); }},
    {"deep_sets_pooling",
     "the equivariant layer, sum, n 4 of 3 → 2, lengths 4 and 3",
     {Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<DeepSetsEquivariant>(3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return flat(as<DeepSetsEquivariant>(m).forward(x[0], length_mask({4, 3}, 4)));
     }},
    {"gru_gating",
     "5 steps, d_x 2, d_h 3, given h_0",
     {Shape{2, 5, 2}, Shape{2, 3}},
     [](Generator& g) { return std::make_unique<GruGating>(2, 3, g); },
     [](Module* m, const std::vector<Var>& x) {
         const GruGatingOutput o = as<GruGating>(m).forward(x[0], x[1]);
         return concat({flat(o.states), flat(o.update_gates), flat(o.reset_gates)}, 0);
     }},
    {"gru_gating",
     "4 steps, lengths 4 and 2",
     {Shape{2, 4, 2}},
     [](Generator& g) { return std::make_unique<GruGating>(2, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return flat(as<GruGating>(m).forward(x[0], Var(), length_mask({4, 2}, 4)).states);
     }},
});

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

void check_values(const Tensor& got, const std::vector<real>& want) {
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i << ": got " << got[i] << ", want " << want[static_cast<size_t>(i)]);
        CHECK(std::abs(got[i] - want[static_cast<size_t>(i)]) <= 1e-6);
    }
}

// The catalog's column (3, 1, 4, 1, 5, 9, 2, 6) as a 1×8×1 set.
Var catalog_column() { return Var(Tensor::from({3, 1, 4, 1, 5, 9, 2, 6}, {1, 8, 1})); }

// Rows of a B×n×d set reordered: out[:, i] = in[:, perm[i]].
Tensor permute_rows(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t B = x.size(0), n = x.size(1), d = x.size(2);
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t c = 0; c < d; ++c) out[(b * n + i) * d + c] = x[(b * n + perm[static_cast<size_t>(i)]) * d + c];
    return out;
}

const std::vector<int64_t> kPerm = {3, 0, 4, 1, 2};

}  // namespace

// ---- 74. sum_mean_max_pooling -----------------------------------------------------------------

TEST_CASE("sum_mean_max_pooling: permutation invariant; masked rows excluded; mean is attention with equal scores") {
    Generator gen(74);
    const Tensor X = normal({2, 5, 3}, gen);
    const Tensor keep = length_mask({5, 3}, 5);
    const SumMeanMaxPooled p = sum_mean_max_pooling(Var(X), keep);
    const SumMeanMaxPooled q = sum_mean_max_pooling(Var(permute_rows(X, kPerm)));
    const SumMeanMaxPooled full = sum_mean_max_pooling(Var(X));
    CHECK(allclose(q.sum.value(), full.sum.value(), 0, 1e-12));
    CHECK(allclose(q.mean.value(), full.mean.value(), 0, 1e-12));
    CHECK(allclose(q.max.value(), full.max.value(), 0, 0));

    // Padding rows do not count, whatever they hold.
    Tensor loud = X.clone();
    for (int64_t i = 3; i < 5; ++i)
        for (int64_t c = 0; c < 3; ++c) loud[(5 + i) * 3 + c] = 1e3;
    const SumMeanMaxPooled l = sum_mean_max_pooling(Var(loud), keep);
    CHECK(allclose(l.sum.value(), p.sum.value(), 0, 1e-12));
    CHECK(allclose(l.mean.value(), p.mean.value(), 0, 1e-12));
    CHECK(allclose(l.max.value(), p.max.value(), 0, 0));

    // The mean is soft attention with all-equal scores.
    const Var weights = softmax(Var(Tensor::zeros({2, 1, 5})), -1, SoftmaxMask::keep(key_mask(keep)));
    const Tensor attended = reshape(attend(weights, Var(X)).value(), {2, 3});
    CHECK(allclose(attended, p.mean.value(), 0, 1e-12));

    // An empty set gives 0 for all three.
    const SumMeanMaxPooled empty = sum_mean_max_pooling(Var(X), length_mask({0, 0}, 5));
    for (const Var& v : {empty.sum, empty.mean, empty.max}) CHECK(allclose(v.value(), Tensor::zeros({2, 3}), 0, 0));
}

TEST_CASE("sum_mean_max_pooling: the max's gradient goes only to the arg-max row, the first on a tie") {
    const Var X(Tensor::from({1, 7, 7, 2, 7, 0}, {1, 3, 2}), true);  // column 0: (1, 7, 7), column 1: (7, 2, 0)
    sum(max_pooling(X)).backward();
    check_values(X.grad(), {0, 1, 1, 0, 0, 0});
}

// ---- 75. k_max_pooling ------------------------------------------------------------------------

TEST_CASE("k_max_pooling: the catalog's column with k = 3 gives (5, 9, 6); k = 1 is max pooling; ties; padding") {
    check_values(k_max_pooling(catalog_column(), 3).value(), {5, 9, 6});
    Generator gen(75);
    const Var X(normal({2, 6, 3}, gen));
    CHECK(allclose(reshape(k_max_pooling(X, 1).value(), {2, 3}), max_pooling(X).value(), 0, 0));

    // Column (2, 5, 2, 1) with k = 2: the tie at 2 goes to row 0.
    const Var tie(Tensor::from({2, 5, 2, 1}, {1, 4, 1}), true);
    const Var out = k_max_pooling(tie, 2);
    check_values(out.value(), {2, 5});
    sum(out).backward();
    check_values(tie.grad(), {1, 1, 0, 0});

    // Two kept rows for k = 3: zero-padded at the end (the masked row is out).
    check_values(k_max_pooling(Var(Tensor::from({4, 9, 8}, {1, 3, 1})), 3, length_mask({2}, 3)).value(), {4, 9, 0});

    CHECK(dynamic_k(3, 1, 3, 18) == 12);
    CHECK(dynamic_k(3, 2, 3, 18) == 6);
    CHECK(dynamic_k(3, 3, 3, 18) == 3);
    CHECK(dynamic_k(4, 1, 2, 5) == 4);
}

// ---- 76. chunk_max_pooling --------------------------------------------------------------------

TEST_CASE("chunk_max_pooling: the catalog's column in 2 chunks gives (4, 9); c = 1 is max; c = n is the identity") {
    check_values(chunk_max_pooling(catalog_column(), 2).value(), {4, 9});
    check_values(chunk_max_pooling(catalog_column(), 3).value(), {4, 9, 6});  // chunks of 3, 3, 2
    check_values(chunk_max_pooling(catalog_column(), 1).value(), {9});
    check_values(chunk_max_pooling(catalog_column(), 8).value(), {3, 1, 4, 1, 5, 9, 2, 6});
    // Only the first 5 kept: (3, 1, 4 | 1, 5).
    check_values(chunk_max_pooling(catalog_column(), 2, length_mask({5}, 8)).value(), {4, 5});
    check_values(chunk_max_pooling(catalog_column(), std::vector<int64_t>{0, 5, 6, 8}).value(), {5, 9, 6});
    CHECK_THROWS_AS(chunk_max_pooling(catalog_column(), std::vector<int64_t>{0, 5, 5, 8}), std::invalid_argument);
}

// ---- 77. stochastic_pooling -------------------------------------------------------------------

TEST_CASE("stochastic_pooling: region (1, 2, 3, 4) gives 3.0 at test time; training picks a region value") {
    const Var U(Tensor::from({1, 2, 3, 4}, {1, 1, 2, 2}));
    Generator gen(77);
    check_values(stochastic_pooling(U, 2, 0, gen, false).value(), {3.0});
    for (int i = 0; i < 20; ++i) {
        const real s = stochastic_pooling(U, 2, 0, gen, true).item();
        CHECK((s == 1 || s == 2 || s == 3 || s == 4));
    }
    // 10⁵ training draws (one window each, side by side): the mean is within 0.01 of 3.0.
    const int64_t n = 100000;
    Tensor many = Tensor::zeros({1, 1, 2, 2 * n});
    for (int64_t w = 0; w < n; ++w) {
        many[2 * w] = 1, many[2 * w + 1] = 2;
        many[2 * n + 2 * w] = 3, many[2 * n + 2 * w + 1] = 4;
    }
    const real mean_draw = mean(stochastic_pooling(Var(many), 2, 0, gen, true).value()).item();
    CHECK(std::abs(mean_draw - 3.0) < 0.01);
    // An all-zero window gives 0 in both modes; negative activations throw.
    const Var zeros(Tensor::zeros({1, 1, 2, 2}));
    CHECK(stochastic_pooling(zeros, 2, 0, gen, true).item() == 0);
    CHECK(stochastic_pooling(zeros, 2, 0, gen, false).item() == 0);
    CHECK_THROWS_WITH_AS(stochastic_pooling(Var(Tensor::from({1, -2, 3, 4}, {1, 1, 2, 2})), 2, 0, gen, false),
                         doctest::Contains("stochastic_pooling: feature map 1×1×2×2"), std::invalid_argument);
}

// ---- 78. spatial_pyramid_pooling --------------------------------------------------------------

TEST_CASE("spatial_pyramid_pooling: one length for 13×13 and 10×10; level {1} is global max; bins cover the map") {
    Generator gen(78);
    const std::vector<int64_t> levels = {1, 2, 3, 6};
    const Var a(normal({2, 3, 13, 13}, gen)), b(normal({2, 3, 10, 10}, gen));
    CHECK(spatial_pyramid_pooling(a, levels).shape() == Shape{2, 3 * 50});
    CHECK(spatial_pyramid_pooling(b, levels).shape() == Shape{2, 3 * 50});
    const Tensor global = max(reshape(a.value(), {2, 3, -1}), -1);
    CHECK(allclose(spatial_pyramid_pooling(a, {1}).value(), global, 0, 0));
    // 13 rows in 3 bins: [0, 5), [4, 9), [8, 13).
    CHECK(pyramid_bin(0, 3, 13).end == 5);
    CHECK(pyramid_bin(1, 3, 13).start == 4);
    CHECK(pyramid_bin(2, 3, 13).end == 13);
    // A 2×2 map at level 2 is the map itself, channel-major.
    const Var small(Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2}));
    check_values(spatial_pyramid_pooling(small, {2}).value(), {1, 2, 3, 4, 5, 6, 7, 8});
}

// ---- 79. deep_sets_pooling --------------------------------------------------------------------

TEST_CASE("deep_sets_pooling: invariant to permutations; ignores padding; sum tells set sizes apart, mean cannot") {
    Generator gen(79);
    const Tensor X = normal({2, 5, 3}, gen);
    for (SetAggregate how : {SetAggregate::sum, SetAggregate::mean, SetAggregate::max}) {
        DeepSetsPooling f(3, 8, 2, gen, how);
        CHECK(allclose(f.forward(Var(permute_rows(X, kPerm))).value(), f.forward(Var(X)).value(), 0, 1e-12));
        Tensor padded = X.clone();
        for (int64_t c = 0; c < 3; ++c) padded[(5 + 4) * 3 + c] = 50;  // row 4 of set 1 is padding
        const Tensor keep = length_mask({5, 4}, 5);
        CHECK(allclose(f.forward(Var(padded), keep).value(), f.forward(Var(X), keep).value(), 0, 0));
    }
    // The same item twice or three times.
    const Tensor item = normal({1, 1, 3}, gen);
    const Var two(expand(item, {1, 2, 3})), three(expand(item, {1, 3, 3}));
    DeepSetsPooling by_sum(3, 8, 2, gen, SetAggregate::sum), by_mean(3, 8, 2, gen, SetAggregate::mean);
    CHECK_FALSE(allclose(by_sum.forward(two).value(), by_sum.forward(three).value(), 0, 1e-6));
    CHECK(allclose(by_mean.forward(two).value(), by_mean.forward(three).value(), 0, 1e-12));
}

TEST_CASE("deep_sets_pooling: the equivariant layer permutes its output with its input") {
    Generator gen(80);
    const Tensor X = normal({2, 5, 3}, gen);
    for (SetAggregate how : {SetAggregate::sum, SetAggregate::max}) {
        DeepSetsEquivariant layer(3, 4, gen, how);
        const Tensor Y = layer.forward(Var(X)).value();
        CHECK(Y.shape() == Shape{2, 5, 4});
        CHECK(allclose(layer.forward(Var(permute_rows(X, kPerm))).value(), permute_rows(Y, kPerm), 0, 1e-12));
    }
}

// ---- 80. gru_gating ---------------------------------------------------------------------------

TEST_CASE("gru_gating: z ≡ 0 copies the state; z ≡ 1 and r ≡ 1 give a plain tanh RNN; a masked step keeps it") {
    Generator gen(81);
    GruGating gru(2, 3, gen);
    const Var X(normal({2, 5, 2}, gen)), h0(normal({2, 3}, gen));

    // σ(−1000) is exactly 0 and σ(1000) exactly 1 in double precision.
    auto force = [](Linear& Wx, Linear& Uh, real bias) {
        Wx.weight.value().fill_(0);
        Uh.weight.value().fill_(0);
        Wx.bias.value().fill_(bias);
    };
    force(gru.W_z, gru.U_z, -1000);
    GruGatingOutput out = gru.forward(X, h0);
    for (int64_t t = 0; t < 5; ++t)
        CHECK(allclose(squeeze(slice(out.states.value(), 1, t, t + 1), 1), h0.value(), 0, 0));

    force(gru.W_z, gru.U_z, 1000);
    force(gru.W_r, gru.U_r, 1000);
    out = gru.forward(X, h0);
    Tensor h = h0.value();
    for (int64_t t = 0; t < 5; ++t) {
        // h_t = tanh(W x_t + b + U h_{t−1})
        const Tensor x = squeeze(slice(X.value(), 1, t, t + 1), 1);
        h = tanh(add(add(matmul(x, gru.W.weight.value(), false, true), gru.W.bias.value()),
                     matmul(h, gru.U.weight.value(), false, true)));
        CHECK(allclose(squeeze(slice(out.states.value(), 1, t, t + 1), 1), h, 0, 1e-12));
    }

    // Sequence 1 has length 2: its state after step 2 stays put.
    GruGating fresh(2, 3, gen);
    const GruGatingOutput masked = fresh.forward(X, h0, length_mask({5, 2}, 5));
    const Tensor states = masked.states.value();
    for (int64_t t = 2; t < 5; ++t)
        for (int64_t k = 0; k < 3; ++k) {
            CHECK(states[((1 * 5) + t) * 3 + k] == states[((1 * 5) + 1) * 3 + k]);
            CHECK(masked.update_gates.value()[((1 * 5) + t) * 3 + k] == 0);
        }
    CHECK(gru.taxonomy().alignment == "sigmoid");
}
