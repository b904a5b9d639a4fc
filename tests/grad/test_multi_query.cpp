// Multiplicity of queries, catalog entries 39, 42 and 43 (attention/multi_query.hpp):
// the independent references and registry entries of 42 and 43
// (tests/grad/catalog.hpp), the property tests, and the
// singular_query_attention tag checked across the modules of the query
// families (double precision, atol 1e-6).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/hierarchical.hpp"
#include "attention/kernel_regression.hpp"
#include "attention/multi_query.hpp"
#include "attention/query_types.hpp"
#include "attention/sequence_variants.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

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
MultiHopAttention::ScoreFactory make_additive_score(int64_t query_and_context, int64_t key_dim, int64_t hidden) {
    return [=](Generator& g) { return std::make_unique<AdditiveScore>(query_and_context, key_dim, hidden, g); };
}

// ---- the independent references: the catalog's formulas in plain loops ------------------

// What a multi-hop case builds: its transform, its score, shared or per hop.
struct Hops {
    MultiHopAttention::Transform transform;
    bool additive;  // additive score, else general
    bool shared;
};

// The parameter `name` of hop s: "score.W" when shared, "score_1.W" for hop 1 otherwise.
std::string hop_param(const Hops& h, const std::string& module, const std::string& name, int64_t s) {
    return module + (h.shared ? "" : "_" + std::to_string(s)) + name;
}

// score(x, k): general k_lᵀ W x (W d_k×(d_q + d_v)) or additive wᵀ tanh(W_1 x + W_2 k_l + b)
double hop_score(const Ref& r, const Hops& h, int64_t s, const Vec& x, const Vec& k) {
    auto p = [&](const std::string& name) { return r.p[hop_param(h, "score", "." + name, s)]; };
    if (!h.additive) return dot(k, matvec(p("W"), x));
    const Vec pre = add(add(matvec(p("W_1"), x), matvec(p("W_2"), k)), vec(p("b")));
    return dot(vec(p("w")), testing::each(pre, tanh_));
}

// 42: c⁽⁰⁾ = the mean of the kept v_l (0 when none is kept)
//     for s = 0 … S−1:
//       q⁽ˢ⁺¹⁾ = transform(q⁽ˢ⁾, c⁽ˢ⁾)          residual q + c, concat_linear W_t [q; c], identity q
//       e⁽ˢ⁾_l = score([q⁽ˢ⁺¹⁾; c⁽ˢ⁾], k_l)
//       c⁽ˢ⁺¹⁾ = Σ_l softmax(e⁽ˢ⁾)_l v_l
// queries B×m×d_q, keys B×n×d_k, values B×n×d_v, key mask B×n
// → output c⁽ˢ⁾ B×m×d_v, weights B×S×m×n, query q⁽ˢ⁾ B×m×d_q
std::vector<Expected> multi_hop_attention_reference(const Ref& r, const Hops& h, int64_t S) {
    const Array &Q = r.x[0], &K = r.x[1], &V = r.x[2];
    const Array mask = r.masks.empty() ? Array() : r.masks[0];
    const int64_t B = Q.size(0), m = Q.size(1), n = K.size(1), d_v = V.size(2);
    Array output({B, m, d_v}), weights({B, S, m, n}), query({B, m, Q.size(2)});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep = keep_row(mask, b, n);
        Vec mean(static_cast<size_t>(d_v), 0.0);
        const double kept = sum(keep);
        for (int64_t l = 0; l < n; ++l)
            if (keep[static_cast<size_t>(l)] != 0) mean = add(mean, scale(row(V, b, l), 1.0 / kept));
        for (int64_t i = 0; i < m; ++i) {
            Vec q = row(Q, b, i), c = mean;
            for (int64_t s = 0; s < S; ++s) {
                switch (h.transform) {
                    case MultiHopAttention::Transform::residual: q = add(q, c); break;
                    case MultiHopAttention::Transform::concat_linear:
                        q = matvec(r.p[hop_param(h, "W_t", "", s)], concat(q, c));
                        break;
                    case MultiHopAttention::Transform::identity: break;
                }
                Vec e(static_cast<size_t>(n));
                for (int64_t l = 0; l < n; ++l)
                    e[static_cast<size_t>(l)] = hop_score(r, h, s, concat(q, c), row(K, b, l));
                const Vec a = softmax(e, keep);
                c.assign(static_cast<size_t>(d_v), 0.0);
                for (int64_t l = 0; l < n; ++l) c = add(c, scale(row(V, b, l), a[static_cast<size_t>(l)]));
                set_row(weights, b, s, i, a);
            }
            set_row(output, b, i, c);
            set_row(query, b, i, q);
        }
    }
    return {{"output", output}, {"weights", weights}, {"query", query}};
}

// hinge(z, y) = (1/C) Σ_{c≠y} max(0, 1 − z_y + z_c)
double hinge(const Vec& z, int64_t y) {
    double total = 0;
    for (size_t c = 0; c < z.size(); ++c)
        if (static_cast<int64_t>(c) != y) total += std::max(0.0, 1 - z[static_cast<size_t>(y)] + z[c]);
    return total / static_cast<double>(z.size());
}

// 43: for each class c:  e_{c,l} = q_cᵀ k_l;  a_c = softmax(e_c);  v_c = Σ_l a_{c,l} v_l
//                        p_c = σ(w_cᵀ v_c + b_c);  r_c = p_c v_c
// and, with features F and targets y, the loss averaged over the batch:
//     hinge(p, y) + hinge(s, y),  s_c = r_cᵀ f̄,  f̄ the mean of the kept feature vectors
// keys B×n×d_k, values B×n×d_v, key mask B×n (features B×n×d_v)
// → probabilities B×C, representations B×C×d_v, weights B×C×n (loss 1)
std::vector<Expected> capsule_attention_reference(const Ref& r, const std::vector<int64_t>& targets = {}) {
    const Array &K = r.x[0], &V = r.x[1];
    const Array mask = r.masks.empty() ? Array() : r.masks[0];
    const Array q = r.p["q"], w = r.p["w"];
    const Vec bias = vec(r.p["b"]);
    const int64_t B = K.size(0), n = K.size(1), d_v = V.size(2), C = q.size(0);
    Array p({B, C}), R({B, C, d_v}), A({B, C, n}), loss({1});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep = keep_row(mask, b, n);
        Vec probabilities(static_cast<size_t>(C)), s(static_cast<size_t>(C));
        Vec f_mean(static_cast<size_t>(d_v), 0.0);
        if (!targets.empty())
            for (int64_t l = 0; l < n; ++l)
                if (keep[static_cast<size_t>(l)] != 0) f_mean = add(f_mean, scale(row(r.x[2], b, l), 1.0 / sum(keep)));
        for (int64_t c = 0; c < C; ++c) {
            Vec e(static_cast<size_t>(n));
            for (int64_t l = 0; l < n; ++l) e[static_cast<size_t>(l)] = dot(row(q, c), row(K, b, l));
            const Vec a = softmax(e, keep);
            Vec v_c(static_cast<size_t>(d_v), 0.0);
            for (int64_t l = 0; l < n; ++l) v_c = add(v_c, scale(row(V, b, l), a[static_cast<size_t>(l)]));
            const double p_c = sigmoid(dot(row(w, c), v_c) + bias[static_cast<size_t>(c)]);
            p(b, c) = probabilities[static_cast<size_t>(c)] = p_c;
            set_row(R, b, c, scale(v_c, p_c));
            set_row(A, b, c, a);
            s[static_cast<size_t>(c)] = dot(scale(v_c, p_c), f_mean);
        }
        if (!targets.empty()) {
            const int64_t y = targets[static_cast<size_t>(b)];
            loss(0) += (hinge(probabilities, y) + hinge(s, y)) / static_cast<double>(B);
        }
    }
    std::vector<Expected> out{{"probabilities", p}, {"representations", R}, {"weights", A}};
    if (!targets.empty()) out.push_back({"loss", loss});
    return out;
}

// ---- runs ---------------------------------------------------------------------------------

Outputs run_hops(Module* m, In x, Masks masks) {
    const MultiHopAttention::Output o = as<MultiHopAttention>(m).forward(x[0], x[1], x[2], mask_or_none(masks));
    return {{"output", o.output}, {"weights", o.weights}, {"query", o.query}};
}

Outputs capsule_outputs(const CapsuleAttention::Output& o) {
    return {{"probabilities", o.probabilities}, {"representations", o.representations}, {"weights", o.weights}};
}

Outputs run_capsules(Module* m, In x, Masks masks) {
    return capsule_outputs(as<CapsuleAttention>(m).forward(x[0], x[1], mask_or_none(masks)));
}

const std::vector<int64_t> kTargets{2, 0, 1};

// The capsules and their training loss on features x[2] with targets kTargets.
Outputs run_capsule_loss(Module* m, In x, Masks masks) {
    const CapsuleAttention::Output o = as<CapsuleAttention>(m).forward(x[0], x[1], mask_or_none(masks));
    Outputs out = capsule_outputs(o);
    const Tensor targets = Tensor::from({real(kTargets[0]), real(kTargets[1]), real(kTargets[2])}, Shape{3});
    out.push_back({"loss", reshape(capsule_loss(o, x[2], targets, mask_or_none(masks)), {1})});
    return out;
}

// ---- the registry entries ---------------------------------------------------------------
using Transform = MultiHopAttention::Transform;

const KeySet hop_keys{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}};

std::vector<Property> hop_properties(bool masked) {
    return {rows_sum_to_one("weights"), convex_combination("output", 2, masked ? 0 : -1),
            permutation_invariant({1, 2}, masked ? std::vector<int>{0} : std::vector<int>{}, {"output", "query"})};
}

// A multi-hop case: S hops of `h` with these widths.
Case hop_case(std::string variant, const Hops& h, int64_t S, int64_t d_q, int64_t d_k, int64_t d_v, int64_t d_w,
              std::vector<Shape> inputs, std::vector<Tensor> masks) {
    const bool masked = !masks.empty();
    return {.variant = std::move(variant),
            .inputs = std::move(inputs),
            .masks = std::move(masks),
            .make = [=](Generator& g) {
                const auto score =
                    h.additive ? make_additive_score(d_q + d_v, d_k, d_w) : make_general_score(d_q + d_v, d_k);
                return std::make_unique<MultiHopAttention>(d_q, d_v, score, hop_options(S, h.shared, h.transform), g);
            },
            .run = run_hops,
            .reference = [=](const Ref& r) { return multi_hop_attention_reference(r, h, S); },
            .masking = masked ? std::vector<KeySet>{hop_keys} : std::vector<KeySet>{},
            .properties = hop_properties(masked)};
}

const RegisterEntry multi_hop_attention_entry(42, "multi_hop_attention", {
    hop_case("3 shared hops, residual, general score, d_q = d_v = 3, d_k 2, lengths 4 and 2",
             {Transform::residual, false, true}, 3, 3, 2, 3, 0, {Shape{2, 2, 3}, Shape{2, 4, 2}, Shape{2, 4, 3}},
             {keep_first({4, 2}, 4)}),
    hop_case("2 hops with their own parameters, residual, additive score with square W_2 (d_w = d_k = 3)",
             {Transform::residual, true, false}, 2, 3, 3, 3, 3, {Shape{2, 2, 3}, Shape{2, 5, 3}, Shape{2, 5, 3}}, {}),
    hop_case("2 hops with their own parameters, concat + linear, additive score, d_q 3 ≠ d_v 2, lengths 3 and 4",
             {Transform::concat_linear, true, false}, 2, 3, 2, 2, 4, {Shape{2, 2, 3}, Shape{2, 4, 2}, Shape{2, 4, 2}},
             {keep_first({3, 4}, 4)}),
    hop_case("3 shared hops, concat + linear, general score, d_q 2, d_k 4, d_v 3",
             {Transform::concat_linear, false, true}, 3, 2, 4, 3, 0, {Shape{2, 3, 2}, Shape{2, 5, 4}, Shape{2, 5, 3}},
             {}),
    hop_case("3 hops with their own parameters, identity transform, general score, lengths 2 and 5",
             {Transform::identity, false, false}, 3, 2, 3, 4, 0, {Shape{2, 2, 2}, Shape{2, 5, 3}, Shape{2, 5, 4}},
             {keep_first({2, 5}, 5)}),
    hop_case("2 shared hops, identity transform, additive score, d_q = d_v = 3 (q + c would be shape-valid)",
             {Transform::identity, true, true}, 2, 3, 2, 3, 3, {Shape{2, 1, 3}, Shape{2, 4, 2}, Shape{2, 4, 3}}, {}),
    hop_case("one hop, residual, general score", {Transform::residual, false, true}, 1, 2, 3, 2, 0,
             {Shape{2, 2, 2}, Shape{2, 4, 3}, Shape{2, 4, 2}}, {keep_first({4, 3}, 4)}),
});

const KeySet capsule_keys{
    .mask = 0, .inputs = {0, 1}, .weights = {"weights"}, .zero_when_empty = {"representations"}};

// Features five times wider than N(0, 1), so some margins of hinge(s, y) fall below 0 and are clipped.
std::vector<Tensor> draw_with_features(Generator& g) {
    return {Tensor::normal(Shape{3, 4, 3}, 0, 1, g), Tensor::normal(Shape{3, 4, 2}, 0, 1, g),
            Tensor::normal(Shape{3, 4, 2}, 0, 5, g)};
}

const RegisterEntry capsule_attention_entry(43, "capsule_attention", {
    {.variant = "3 classes over 4 positions, d_k 3, d_v 2, lengths 3 and 4",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 2}},
     .masks = {keep_first({3, 4}, 4)},
     .make = [](Generator& g) { return std::make_unique<CapsuleAttention>(3, 3, 2, g); },
     .run = run_capsules,
     .reference = [](const Ref& r) { return capsule_attention_reference(r); },
     .masking = {capsule_keys},
     .properties = {rows_sum_to_one("weights"), bounded("probabilities", 0, 1),
                    permutation_invariant({0, 1}, {0}, {"probabilities", "representations"}),
                    permutation_equivariant_keys({0, 1}, {0}, {"weights"})}},
    {.variant = "square q and w (C = d_k = d_v = 3), 5 positions, no mask",
     .inputs = {Shape{2, 5, 3}, Shape{2, 5, 3}},
     .make = [](Generator& g) { return std::make_unique<CapsuleAttention>(3, 3, 3, g); },
     .run = run_capsules,
     .reference = [](const Ref& r) { return capsule_attention_reference(r); },
     .properties = {rows_sum_to_one("weights"), bounded("probabilities", 0, 1)}},
    {.variant = "the training loss hinge(p, y) + hinge(s, y), targets 2, 0, 1, lengths 4, 2, 3",
     .inputs = {Shape{3, 4, 3}, Shape{3, 4, 2}, Shape{3, 4, 2}},
     .masks = {keep_first({4, 2, 3}, 4)},
     .make = [](Generator& g) { return std::make_unique<CapsuleAttention>(3, 3, 2, g); },
     .run = run_capsule_loss,
     .reference = [](const Ref& r) { return capsule_attention_reference(r, kTargets); },
     .masking = {{.mask = 0, .inputs = {0, 1, 2}, .weights = {"weights"}, .zero_when_empty = {"representations"}}},
     .draw = draw_with_features},
});

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
    // z = (0.2, 1.5, 0.9), y = 1: max(0, −0.3) + max(0, 0.4) = 0.4, over 3
    const Var clipped(Tensor::from({0.2, 1.5, 0.9}, {1, 3}));
    CHECK(std::abs(capsule_hinge(clipped, Tensor::from({1})).item() - 0.4 / 3) < 1e-12);

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
