// Multiplicity of queries, catalog entries 39, 42 and 43 (attention/multi_query.hpp):
// gradient-check cases in the attention registry, the property tests, and the
// singular_query_attention tag checked across the modules of the query
// families (double precision, atol 1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "attention/hierarchical.hpp"
#include "attention/kernel_regression.hpp"
#include "attention/multi_query.hpp"
#include "attention/query_types.hpp"
#include "attention/sequence_variants.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


MultiHopAttention::Options hop_options(int64_t hops, bool shared, MultiHopAttention::Transform t) {
    MultiHopAttention::Options o;
    o.hops = hops;
    o.shared = shared;
    o.transform = t;
    return o;
}

// A score for [q; c] (width d_q + d_v) against keys of width d_k.
MultiHopAttention::ScoreFactory make_general_score(int64_t query_and_context, int64_t key_dim) {
    return [=](Generator& g) { return std::make_unique<GeneralScore>(query_and_context, key_dim, g); };
}

Var hop_run(Module* m, const std::vector<Var>& x, const Tensor& mask) {
    const MultiHopAttention::Output out = as<MultiHopAttention>(m).forward(x[0], x[1], x[2], mask);
    return concat({flat(out.output), flat(out.weights)}, 0);
}

const RegisterMechanisms multi_query_cases({
    {"multi_hop_attention",
     "3 shared hops, residual, lengths 4 and 0",
     {Shape{2, 1, 3}, Shape{2, 4, 2}, Shape{2, 4, 3}},
     [](Generator& g) {
         return std::make_unique<MultiHopAttention>(3, 3, make_general_score(6, 2),
                                                    hop_options(3, true, MultiHopAttention::Transform::residual), g);
     },
     [](Module* m, const std::vector<Var>& x) {
         return hop_run(m, x, length_mask({4, 0}, 4));
     }},
    {"multi_hop_attention",
     "2 hops with their own parameters, concat + linear",
     {Shape{2, 2, 3}, Shape{2, 4, 2}, Shape{2, 4, 2}},
     [](Generator& g) {
         return std::make_unique<MultiHopAttention>(
             3, 2, [](Generator& gg) { return std::make_unique<AdditiveScore>(5, 2, 4, gg); },
             hop_options(2, false, MultiHopAttention::Transform::concat_linear), g);
     },
     [](Module* m, const std::vector<Var>& x) {
         return hop_run(m, x, length_mask({3, 4}, 4));
     }},
    {"capsule_attention",
     "3 classes over 4 positions, lengths 4 and 0",
     {Shape{2, 4, 3}, Shape{2, 4, 2}},
     [](Generator& g) { return std::make_unique<CapsuleAttention>(3, 3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<CapsuleAttention>(m).forward(x[0], x[1], length_mask({4, 0}, 4));
         return concat({flat(out.probabilities), flat(out.representations), flat(out.weights)}, 0);
     }},
    {"capsule_attention",
     "the hinge loss of p and of the reconstruction",
     {Shape{2, 4, 3}, Shape{2, 4, 2}},
     [](Generator& g) { return std::make_unique<CapsuleAttention>(3, 3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         const auto out = as<CapsuleAttention>(m).forward(x[0], x[1], length_mask({4, 3}, 4));
         return capsule_loss(out, x[1], Tensor::from({2, 0}), length_mask({4, 3}, 4));
     }},
});

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

}  // namespace

// ---- 42. multi_hop_attention ---------------------------------------------------------------

TEST_CASE("multi_hop_attention: shared parameters do not grow with S; per-hop ones do") {
    Generator gen(42);
    int64_t shared_count = -1;
    for (int64_t S : {1, 2, 5}) {
        MultiHopAttention shared(3, 3, make_general_score(6, 4),
                                 hop_options(S, true, MultiHopAttention::Transform::concat_linear), gen);
        MultiHopAttention own(3, 3, make_general_score(6, 4),
                              hop_options(S, false, MultiHopAttention::Transform::concat_linear), gen);
        if (shared_count < 0) shared_count = shared.num_parameters();
        CHECK(shared.num_parameters() == shared_count);
        CHECK(own.num_parameters() == S * shared_count);
        CHECK(shared.forward(Var(normal({2, 1, 3}, gen)), Var(normal({2, 5, 4}, gen)), Var(normal({2, 5, 3}, gen)))
                  .weights.shape() == Shape{2, S, 1, 5});
    }
    CHECK_THROWS_AS(MultiHopAttention(3, 2, make_general_score(5, 4),
                                      hop_options(2, true, MultiHopAttention::Transform::residual), gen),
                    std::invalid_argument);  // q + c needs d_q = d_v
}

TEST_CASE("multi_hop_attention: one hop, identity transform, a score blind to c is single attention") {
    Generator gen(43);
    const int64_t d_q = 3, d_v = 2, d_k = 4;
    MultiHopAttention hop(d_q, d_v, make_general_score(d_q + d_v, d_k),
                          hop_options(1, true, MultiHopAttention::Transform::identity), gen);
    // e = k_lᵀ W [q; c]: zero the columns of W that act on c
    auto& W = static_cast<GeneralScore&>(hop.score(0)).W.value();
    for (int64_t r = 0; r < d_k; ++r)
        for (int64_t col = d_q; col < d_q + d_v; ++col) W[r * (d_q + d_v) + col] = 0;
    GeneralAttention single(std::make_unique<GeneralScore>(d_q, d_k, gen), std::make_unique<SoftAlignment>());
    static_cast<GeneralScore&>(single.score()).W.value().copy_(slice(W, 1, 0, d_q));

    const Var q(normal({2, 2, d_q}, gen)), K(normal({2, 5, d_k}, gen)), V(normal({2, 5, d_v}, gen));
    const Tensor mask = length_mask({5, 3}, 5);
    const auto a = hop.forward(q, K, V, mask);
    const auto b = single.forward(q, K, V, key_mask(mask));
    CHECK(allclose(a.output.value(), b.output.value(), 0, 1e-12));
    CHECK(allclose(squeeze(a.weights.value(), 1), b.weights.value(), 0, 1e-12));
}

// ---- 43. capsule_attention ------------------------------------------------------------------

TEST_CASE("capsule_attention: changing q_c changes only capsule c; p need not sum to 1") {
    Generator gen(44);
    CapsuleAttention caps(3, 4, 2, gen);
    const Var K(normal({2, 5, 4}, gen)), V(normal({2, 5, 2}, gen));
    const auto before = caps.forward(K, V);
    for (int64_t j = 0; j < 4; ++j) caps.q.value()[1 * 4 + j] += 0.7;  // q_1 only
    const auto after = caps.forward(K, V);
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t c = 0; c < 3; ++c) {
            const bool same = c != 1;
            CHECK((before.probabilities.value().at({b, c}) == after.probabilities.value().at({b, c})) == same);
            CHECK((before.representations.value().at({b, c, 0}) == after.representations.value().at({b, c, 0})) ==
                  same);
            CHECK((before.weights.value().at({b, c, 0}) == after.weights.value().at({b, c, 0})) == same);
        }
    const Tensor p_sum = sum(before.probabilities.value(), -1);
    CHECK(std::abs(p_sum[0] - 1) > 1e-3);
    CHECK(caps.taxonomy().query_multiplicity == "capsule");
}

TEST_CASE("capsule_attention: the hinge loss on a worked example; the reconstruction needs d_v = d_f") {
    // z = (0.2, 0.9, 0.5), y = 1: (max(0, 1 − 0.9 + 0.2) + max(0, 1 − 0.9 + 0.5)) / 3 = 0.3
    const Var z(Tensor::from({0.2, 0.9, 0.5}, {1, 3}));
    CHECK(std::abs(capsule_hinge(z, Tensor::from({1})).item() - 0.3) < 1e-12);
    // y = 0: (1.7 + 1.3) / 3 = 1
    CHECK(std::abs(capsule_hinge(z, Tensor::from({0})).item() - 1.0) < 1e-12);

    Generator gen(45);
    CapsuleAttention caps(3, 4, 2, gen);
    const Var K(normal({2, 5, 4}, gen)), V(normal({2, 5, 2}, gen));
    const auto out = caps.forward(K, V);
    CHECK_THROWS_AS(capsule_loss(out, Var(normal({2, 5, 3}, gen)), Tensor::from({0, 1})), std::invalid_argument);
    CHECK(std::isfinite(capsule_loss(out, V, Tensor::from({0, 1})).item()));
}

// ---- 39. singular_query_attention -------------------------------------------------------------

TEST_CASE("singular_query_attention: every module of the query families is singular except multi-hop and capsules") {
    Generator gen(39);
    auto general = [&] { return std::make_unique<GeneralScore>(3, 3, gen); };
    BahdanauAttention bahdanau(3, 3, 4, gen);
    LuongAttention luong(3, 3, LuongAttention::Options{}, gen);
    SpecializedQueryAttention specialized(std::make_unique<MeanQuery>(), general(), std::make_unique<SoftAlignment>());
    ConstantQuerySelfAttention constant(3, 4, gen);
    LearnedQuerySelfAttention learned(3, gen);
    HierarchicalAttention han(3, 4, gen);
    ParametricNadarayaWatsonPooling nw;
    DoublyStochasticSoftAttention show_attend_tell(3, 3, 4, gen);
    FeedForwardAttention feed_forward(3, gen);
    StructuredSelfAttention structured(3, 4, 2, gen);
    for (const AttentionModule* m :
         std::vector<const AttentionModule*>{&bahdanau, &luong, &specialized, &constant, &learned, &han, &nw,
                                             &show_attend_tell, &feed_forward, &structured}) {
        INFO(m->id() << ": " << m->taxonomy().str());
        CHECK(singular_query_attention(m->taxonomy()));
    }
    MultiHopAttention hops(3, 3, make_general_score(6, 3), hop_options(2, true, MultiHopAttention::Transform::residual),
                           gen);
    CapsuleAttention capsules(2, 3, 3, gen);
    CHECK_FALSE(singular_query_attention(hops.taxonomy()));
    CHECK_FALSE(singular_query_attention(capsules.taxonomy()));
    CHECK(hops.taxonomy().query_multiplicity == "multi-hop");
}
