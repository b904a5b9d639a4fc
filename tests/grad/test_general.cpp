// Catalog entry 1, `general_attention` (attention/general.hpp), and the
// survey's baseline nodes that are taxonomy tags: entries 2, 10, 13, 29, 39.
// Their registry entries, references and properties (permutation, the convex
// hull, equal keys, masks) are in test_general_reference.cpp; here
// are the shape errors and the tags by hand.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "attention/alignments.hpp"
#include "attention/multi_dimensional.hpp"
#include "attention/scores.hpp"
#include "tensor/ops.hpp"

using namespace attn;

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

}  // namespace

// ---- 1. general_attention -------------------------------------------------------------------

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
