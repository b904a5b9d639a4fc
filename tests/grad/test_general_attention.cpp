// Catalog entry 1, `general_attention` (attention/general.hpp), and the
// survey's baseline nodes that are taxonomy tags: entries 2, 10, 13, 29, 39.
// Gradient-check cases in the attention registry, and the catalog's property
// tests in double precision: permutation equivariance of the weights and
// invariance of the context, the context inside the values' hull, equal keys
// giving the mean, and a fully masked row giving zero output and gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/multi_dimensional.hpp"
#include "attention/scores.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// Additive score + soft alignment, learning W_K (4×6) and W_V (2×6).
std::unique_ptr<GeneralAttention> additive_soft(Generator& gen) {
    GeneralAttention::Options o;
    o.feature_dim = 6;
    o.key_dim = 4;
    o.value_dim = 2;
    return std::make_unique<GeneralAttention>(std::make_unique<AdditiveScore>(3, 4, 5, gen),
                                              std::make_unique<SoftAlignment>(), o, gen);
}

GeneralAttention& as_general(Module* m) { return *static_cast<GeneralAttention*>(m); }

Var output_and_weights(const AttentionOutput& out) {
    return concat({reshape(out.output, {-1}), reshape(out.weights, {-1})}, 0);
}

const RegisterMechanisms general_cases({
    {"general_attention", "additive score, soft alignment, W_K and W_V, padding and a fully masked row",
     {Shape{2, 3, 3}, Shape{2, 5, 6}}, [](Generator& g) { return additive_soft(g); },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as_general(m).forward(x[0], x[1], key_mask(length_mask({3, 0}, 5))));
     }},
    {"general_attention", "dot score, soft alignment, keys = values = features", {Shape{2, 2, 4}, Shape{2, 5, 4}},
     [](Generator&) {
         return std::make_unique<GeneralAttention>(std::make_unique<DotScore>(), std::make_unique<SoftAlignment>());
     },
     [](Module* m, const std::vector<Var>& x) { return output_and_weights(as_general(m).forward(x[0], x[1])); }},
    {"general_attention", "general score, local-m alignment, separate keys and values",
     {Shape{2, 4, 3}, Shape{2, 6, 5}, Shape{2, 6, 2}},
     [](Generator& g) {
         return std::make_unique<GeneralAttention>(std::make_unique<GeneralScore>(3, 5, g),
                                                   std::make_unique<LocalMonotonicAlignment>(1));
     },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as_general(m).forward(x[0], x[1], x[2], Tensor()));
     }},
});

Tensor permute_rows(const Tensor& x, const std::vector<int64_t>& perm) { return index_select(x, 1, perm); }

}  // namespace

// ---- 1. general_attention -------------------------------------------------------------------

TEST_CASE("general_attention: permuting the rows of F permutes a the same way and leaves c unchanged") {
    Generator gen(1);
    auto attention = additive_soft(gen);
    const Tensor Q = Tensor::normal(Shape{2, 3, 3}, 0, 1, gen), F = Tensor::normal(Shape{2, 5, 6}, 0, 1, gen);
    const Tensor mask = key_mask(length_mask({4, 5}, 5));
    const std::vector<int64_t> perm = {3, 0, 4, 1, 2};  // row l of F' is row perm[l] of F

    const AttentionOutput out = attention->forward(Var(Q), Var(F), mask);
    const Tensor permuted_mask = key_mask(permute_rows(mask.reshape(Shape{2, 5}), perm));
    const AttentionOutput permuted = attention->forward(Var(Q), Var(permute_rows(F, perm)), permuted_mask);
    for (int64_t i = 0; i < out.output.numel(); ++i)
        CHECK(std::abs(permuted.output.value()[i] - out.output.value()[i]) <= 1e-12);
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t l = 0; l < 5; ++l)
                CHECK(std::abs(permuted.weights.value().at({b, i, l}) - out.weights.value().at({b, i, perm[l]})) <=
                      1e-12);
}

TEST_CASE("general_attention: with soft alignment each c_j lies between the min and max of column j of V") {
    Generator gen(2);
    auto attention = additive_soft(gen);
    const Var Q(Tensor::normal(Shape{3, 4, 3}, 0, 1, gen)), F(Tensor::normal(Shape{3, 7, 6}, 0, 1, gen));
    const Tensor c = attention->forward(Q, F).output.value();
    const Tensor V = matmul(F.value(), attention->W_V.value(), false, true);  // V = F W_Vᵀ   3×7×2
    const Tensor lo = min(V, 1), hi = max(V, 1);                               // 3×2
    for (int64_t b = 0; b < 3; ++b)
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 2; ++j) {
                CHECK(c.at({b, i, j}) >= lo.at({b, j}) - 1e-12);
                CHECK(c.at({b, i, j}) <= hi.at({b, j}) + 1e-12);
            }
}

TEST_CASE("general_attention: if all keys are equal, c is the (masked) mean of the values") {
    Generator gen(3);
    GeneralAttention attention(std::make_unique<AdditiveScore>(3, 4, 5, gen), std::make_unique<SoftAlignment>());
    const Var Q(Tensor::normal(Shape{2, 3, 3}, 0, 1, gen));
    const Var K(expand(Tensor::normal(Shape{2, 1, 4}, 0, 1, gen), Shape{2, 6, 4}));  // one key, repeated
    const Var V(Tensor::normal(Shape{2, 6, 2}, 0, 1, gen));
    const Tensor mask = key_mask(length_mask({6, 4}, 6));
    const Tensor c = attention.forward(Q, K, V, mask).output.value();
    for (int64_t b = 0; b < 2; ++b) {
        const int64_t len = b == 0 ? 6 : 4;
        for (int64_t j = 0; j < 2; ++j) {
            double mean_v = 0;
            for (int64_t l = 0; l < len; ++l) mean_v += V.value().at({b, l, j});
            mean_v /= static_cast<double>(len);
            for (int64_t i = 0; i < 3; ++i) CHECK(std::abs(c.at({b, i, j}) - mean_v) <= 1e-12);
        }
    }
}

TEST_CASE("general_attention: a fully masked row gives zero weights, zero output and zero gradient") {
    Generator gen(4);
    auto attention = additive_soft(gen);
    Var Q(Tensor::normal(Shape{2, 3, 3}, 0, 1, gen), true), F(Tensor::normal(Shape{2, 5, 6}, 0, 1, gen), true);
    const AttentionOutput out = attention->forward(Q, F, key_mask(length_mask({5, 0}, 5)));
    sum(out.output * Var(Tensor::normal(out.output.shape(), 0, 1, gen))).backward();
    for (int64_t i = 15; i < 30; ++i) CHECK(out.weights.value()[i] == 0);
    for (int64_t i = 6; i < 12; ++i) CHECK(out.output.value()[i] == 0);
    for (int64_t i = 9; i < 18; ++i) CHECK(Q.grad()[i] == 0);  // the masked example's queries
    for (int64_t i = 30; i < 60; ++i) CHECK(F.grad()[i] == 0);  // and its features
    for (const Var& p : attention->parameters())
        for (int64_t i = 0; i < p.numel(); ++i) CHECK(std::isfinite(p.grad()[i]));
}

TEST_CASE("general_attention: shape errors name the mechanism and the shapes") {
    Generator gen(5);
    auto attention = additive_soft(gen);
    CHECK(attention->id() == "general_attention");
    CHECK_THROWS_WITH_AS(attention->forward(Var(Tensor::zeros(Shape{2, 1, 3})), Var(Tensor::zeros(Shape{3, 5, 6}))),
                         "general_attention: queries 2×1×3, keys 3×5×4 and values 3×5×2 need the same batch size",
                         std::invalid_argument);
    CHECK_THROWS_AS(attention->forward(Var(Tensor::zeros(Shape{2, 3})), Var(Tensor::zeros(Shape{2, 5, 6}))),
                    std::invalid_argument);
}

// ---- the tag-only entries 2, 10, 13, 29, 39 ------------------------------------------------------

TEST_CASE("taxonomy tags: general_attention is singular, single-level, single-representational, single-dimensional, singular-query") {
    Generator gen(6);
    auto attention = additive_soft(gen);
    const Taxonomy t = attention->taxonomy();
    CHECK(t.scoring == "additive_score");
    CHECK(t.alignment == "soft");
    CHECK(singular_features_attention(t));         // 2  singular_features_attention
    CHECK(single_level_attention(t));              // 10 single_level_attention
    CHECK(single_representational_attention(t));   // 13 single_representational_attention
    CHECK(single_dimensional_attention(t));        // 29 single_dimensional_attention
    CHECK(singular_query_attention(t));            // 39 singular_query_attention
    CHECK(t.str() ==
          "multiplicity=singular levels=single representations=single scoring=additive_score alignment=soft "
          "dimensionality=single query=basic query_multiplicity=singular");

    // 29: one scalar weight per value vector, so the weights are B×m×n ...
    const AttentionOutput out =
        attention->forward(Var(Tensor::zeros(Shape{2, 3, 3})), Var(Tensor::zeros(Shape{2, 5, 6})));
    CHECK(out.weights.shape() == Shape{2, 3, 5});
    // ... while multi_dimensional_attention weighs every feature: B×m×n×d_v, not single-dimensional.
    MultiDimensionalAttention multi(3, 4, 5, 2, gen);
    CHECK(!single_dimensional_attention(multi.taxonomy()));

    // Each predicate rejects the other nodes of its axis.
    Taxonomy other = t;
    other.multiplicity = "co-attention";
    other.levels = "multi";
    other.representations = "multi";
    other.query_multiplicity = "multi-head";
    CHECK(!singular_features_attention(other));
    CHECK(!single_level_attention(other));
    CHECK(!single_representational_attention(other));
    CHECK(!singular_query_attention(other));
}

TEST_CASE("general_attention: the taxonomy names whichever score and alignment it holds") {
    Generator gen(7);
    GeneralAttention::Options self;
    self.query_is_self = true;
    GeneralAttention attention(std::make_unique<ScaledDotScore>(), std::make_unique<HardAlignment>(gen), self, gen);
    CHECK(attention.taxonomy().scoring == "scaled_dot_score");
    CHECK(attention.taxonomy().alignment == "hard");
    CHECK(attention.taxonomy().query == "self");
    // Every alignment's tag.
    CHECK(LocalMonotonicAlignment(2).tag() == "local-m");
    CHECK(LocalPredictiveAlignment(2, 2, 2, gen).tag() == "local-p");
    CHECK(GumbelSoftmaxAlignment(gen).tag() == "gumbel-softmax");
    CHECK(ReinforcedAlignment(2, 2, gen).tag() == "reinforced");
    CHECK(ElementwiseAlignment().tag() == "elementwise-sigmoid");
}
