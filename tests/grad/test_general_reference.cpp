// General attention, catalog entry 1 (attention/general.hpp), and the taxonomy
// tags of entries 2, 10, 13, 29 and 39: their registry entries
// (tests/grad/catalog.hpp) and the independent reference, general_attention_reference.
// Every case is a GeneralAttention built from a Spec (which score, which
// alignment, which projections, which inputs), so one reference covers them
// all; the tag entries run one such module each, with a property checking the
// tag on it and on modules of other families that should and should not carry it.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/co_attention.hpp"
#include "attention/feature_levels.hpp"
#include "attention/hierarchical.hpp"
#include "attention/multi_dimensional.hpp"
#include "attention/multi_head.hpp"
#include "attention/multi_query.hpp"
#include "attention/scores.hpp"
#include "tests/function.hpp"
#include "tests/grad/alignments_reference.hpp"
#include "tests/grad/catalog.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- what a case builds ----------------------------------------------------------------------

enum class ScoreKind { additive, dot, scaled_dot, general, biased_general, activated_general };
enum class AlignKind { soft, hard, local_m, local_p, reinforced, gumbel, sigmoid, relu_sum };

struct Spec {
    ScoreKind score = ScoreKind::additive;
    AlignKind align = AlignKind::soft;
    int64_t key_dim = 0;    // > 0: learn W_K (d_k×d_f)
    int64_t value_dim = 0;  // > 0: learn W_V (d_v×d_f)
    bool separate = false;  // x[1] the keys, x[2] the values: forward(Q, K, V, mask)
    bool self = false;      // the queries are the features: forward(X, X, mask)
    bool causal = false;    // the key mask combined with a causal mask (B×m×n)
    double T = 1;           // soft: temperature; gumbel: τ
    int64_t D = 1;          // local-m, local-p: the half-width
    bool sample_in_eval = false;
};

std::unique_ptr<ScoreFunction> make_score(ScoreKind kind, int64_t d_q, int64_t d_k, Generator& g) {
    switch (kind) {
        case ScoreKind::additive: return std::make_unique<AdditiveScore>(d_q, d_k, 5, g);
        case ScoreKind::dot: return std::make_unique<DotScore>();
        case ScoreKind::scaled_dot: return std::make_unique<ScaledDotScore>();
        case ScoreKind::general: return std::make_unique<GeneralScore>(d_q, d_k, g);
        case ScoreKind::biased_general: return std::make_unique<BiasedGeneralScore>(d_q, d_k, g);
        case ScoreKind::activated_general: return std::make_unique<ActivatedGeneralScore>(d_q, d_k, g);
    }
    return nullptr;
}

std::unique_ptr<Alignment> make_alignment(const Spec& s, int64_t d_q, Generator& g) {
    switch (s.align) {
        case AlignKind::soft: return std::make_unique<SoftAlignment>(s.T);
        case AlignKind::hard: return std::make_unique<HardAlignment>(g, HardAlignment::Options{s.sample_in_eval, 0});
        case AlignKind::local_m: return std::make_unique<LocalMonotonicAlignment>(s.D);
        case AlignKind::local_p: return std::make_unique<LocalPredictiveAlignment>(d_q, 4, s.D, g);
        case AlignKind::reinforced: return std::make_unique<ReinforcedAlignment>(d_q, 3, g);
        case AlignKind::gumbel: return std::make_unique<GumbelSoftmaxAlignment>(g, s.T);
        case AlignKind::sigmoid: return std::make_unique<ElementwiseAlignment>();
        case AlignKind::relu_sum:
            return std::make_unique<ElementwiseAlignment>(ElementwiseAlignment::Kind::relu,
                                                          ElementwiseAlignment::Normalizer::sum);
    }
    return nullptr;
}

// ---- the independent reference ------------------------------------------------------------------

// The score functions of entries 15–20, reading the module's "score.*" parameters.
Function<double(const Vec&, const Vec&)> score_reference(const Ref& r, ScoreKind kind) {
    switch (kind) {
        case ScoreKind::additive: {  // e = wᵀ tanh(W_1 q + W_2 k + b)
            const Array W_1 = r.p["score.W_1"], W_2 = r.p["score.W_2"];
            const Vec b = vec(r.p["score.b"]), w = vec(r.p["score.w"]);
            return [=](const Vec& q, const Vec& k) {
                return dot(w, each(add(add(matvec(W_1, q), matvec(W_2, k)), b), std::tanh));
            };
        }
        case ScoreKind::dot: return [](const Vec& q, const Vec& k) { return dot(q, k); };  // e = qᵀk
        case ScoreKind::scaled_dot:  // e = qᵀk / √d_k
            return [](const Vec& q, const Vec& k) { return dot(q, k) / std::sqrt(static_cast<double>(k.size())); };
        case ScoreKind::general: {  // e = kᵀ W q
            const Array W = r.p["score.W"];
            return [=](const Vec& q, const Vec& k) { return dot(k, matvec(W, q)); };
        }
        case ScoreKind::biased_general: {  // e = kᵀ (W q + b)
            const Array W = r.p["score.W"];
            const Vec b = vec(r.p["score.b"]);
            return [=](const Vec& q, const Vec& k) { return dot(k, add(matvec(W, q), b)); };
        }
        case ScoreKind::activated_general: {  // e = tanh(kᵀ W q + b)
            const Array W = r.p["score.W"];
            const double b = r.p["score.b"][0];
            return [=](const Vec& q, const Vec& k) { return std::tanh(dot(k, matvec(W, q)) + b); };
        }
    }
    return nullptr;
}

// The alignments of entries 22–28 (alignments_reference.hpp), reading "align.*".
Array align_reference(const Ref& r, const Spec& s, const Array& E, const Array& keep, const Array& Q) {
    switch (s.align) {
        case AlignKind::soft: return soft_alignment_reference(E, keep, s.T);
        case AlignKind::hard:
            return hard_alignment_reference(E, keep, r.noise, r.training || s.sample_in_eval, 0).weights;
        case AlignKind::local_m: return local_monotonic_reference(E, keep, s.D);
        case AlignKind::local_p:
            return local_predictive_reference(
                E, keep, local_predictive_centres(Q, r.p["align.W_p"], vec(r.p["align.v_p"]), keep), s.D);
        case AlignKind::reinforced: {
            Array valid({E.size(0), E.size(2)});  // a token is real if some query may attend to it
            for (int64_t f = 0; f < keep.numel(); ++f) {
                const int64_t b = f / (E.size(1) * E.size(2)), l = f % E.size(2);
                valid(b, l) = std::max(valid(b, l), keep[f]);
            }
            auto sampler = [&](const std::string& name) {
                const std::string p = "align." + name + ".";
                return resa_sampler_reference(Q, valid, r.p[p + "W_1"], vec(r.p[p + "b_1"]), vec(r.p[p + "w_2"]),
                                              r.p[p + "b_2"][0], r.noise, r.training);
            };
            const SamplerDraw attending = sampler("attending");  // drawn first
            const SamplerDraw attended = sampler("attended");
            return restricted_softmax_reference(E, keep, attending.z, attended.z);
        }
        case AlignKind::gumbel: return gumbel_softmax_reference(E, keep, r.noise, s.T, r.training, false);
        case AlignKind::sigmoid: return elementwise_reference(E, keep, ElementwiseRef::sigmoid);
        case AlignKind::relu_sum: return elementwise_reference(E, keep, ElementwiseRef::relu_sum);
    }
    return {};
}

// X Wᵀ for X B×n×d_in and W d_out×d_in: row l becomes W x_l.
Array project(const Array& X, const Array& W) {
    Array Y({X.size(0), X.size(1), W.size(0)});
    for (int64_t b = 0; b < X.size(0); ++b)
        for (int64_t l = 0; l < X.size(1); ++l) set_row(Y, b, l, matvec(W, row(X, b, l)));
    return Y;
}

// 1: K = F W_Kᵀ (or F), V = F W_Vᵀ (or F); e_il = score(q_i, k_l); A = align(E)
// over the kept keys; c_i = Σ_l a_il v_l.
//   Q B×m×d_q, F B×n×d_f (or K B×n×d_k and V B×n×d_v given) → c B×m×d_v, A B×m×n
std::vector<Expected> general_attention_reference(const Ref& r, const Spec& s) {
    const Array& Q = r.x[0];
    const Array& F = s.self ? r.x[0] : r.x[1];
    const Array K = s.separate ? r.x[1] : s.key_dim > 0 ? project(F, r.p["W_K"]) : F;
    const Array V = s.separate ? r.x[2] : s.value_dim > 0 ? project(F, r.p["W_V"]) : F;
    const int64_t B = Q.size(0), m = Q.size(1), n = K.size(1);
    const auto score = score_reference(r, s.score);
    Array E({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t l = 0; l < n; ++l) E(b, i, l) = score(row(Q, b, i), row(K, b, l));
    Array keep = keep_keys(r.masks.empty() ? Array() : r.masks[0], B, m, n);
    if (s.causal)  // query i sees key l ≤ i + (n − m)
        for (int64_t b = 0; b < B; ++b)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t l = i + (n - m) + 1; l < n; ++l) keep(b, i, l) = 0;
    const Array A = align_reference(r, s, E, keep, Q);
    Array C({B, m, V.size(2)});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t l = 0; l < n; ++l) set_row(C, b, i, add(row(C, b, i), scale(row(V, b, l), A(b, i, l))));
    return {{"output", C}, {"weights", A}};
}

// ---- properties ---------------------------------------------------------------------------------

// Each coordinate of c lies between the min and max of that column of the
// projected values V = F W_Vᵀ over the kept keys (soft alignment).
Property convex_in_projected_values() {
    return {"c lies in the hull of V = F W_Vᵀ", [](const PropertyContext& c) -> std::string {
                const Array F(c.inputs[1]), W_V(static_cast<GeneralAttention*>(c.module)->W_V.value());
                const Array V = project(F, W_V), C(c.run(c.inputs, c.masks)["output"]);
                const Array mask(c.masks.at(0));
                const int64_t B = V.size(0), n = V.size(1), d = V.size(2), m = C.size(1);
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t k = 0; k < d; ++k) {
                        double lo = INFINITY, hi = -INFINITY;
                        for (int64_t l = 0; l < n; ++l)
                            if (mask(b, l) != 0) lo = std::min(lo, V(b, l, k)), hi = std::max(hi, V(b, l, k));
                        for (int64_t i = 0; i < m; ++i)
                            if (lo <= hi && (C(b, i, k) < lo - 1e-12 || C(b, i, k) > hi + 1e-12))
                                return "c[" + std::to_string(b) + ", " + std::to_string(i) + ", " + std::to_string(k) +
                                       "] = " + std::to_string(C(b, i, k)) + " is outside [" + std::to_string(lo) +
                                       ", " + std::to_string(hi) + "]";
                    }
                return "";
            }};
}

// With every key of an example equal (x[1] rows copied from row 0), c is the
// mean of the kept values x[2].
Property equal_keys_give_mean_of_values() {
    return {"equal keys give the mean of the values", [](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                Tensor& K = x[1] = x[1].clone();
                const int64_t B = K.size(0), n = K.size(1), d_k = K.size(2);
                for (int64_t f = 0; f < K.numel(); ++f) K[f] = K[(f / (n * d_k)) * n * d_k + f % d_k];
                const Array C(c.run(x, c.masks)["output"]), V(x[2]), mask(c.masks.at(0));
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t k = 0; k < V.size(2); ++k) {
                        double mean = 0, count = 0;
                        for (int64_t l = 0; l < n; ++l)
                            if (mask(b, l) != 0) mean += V(b, l, k), count += 1;
                        mean /= count;
                        for (int64_t i = 0; i < C.size(1); ++i)
                            if (std::abs(C(b, i, k) - mean) > 1e-12)
                                return "c[" + std::to_string(b) + ", " + std::to_string(i) + ", " + std::to_string(k) +
                                       "] = " + std::to_string(C(b, i, k)) + ", the mean is " + std::to_string(mean);
                    }
                return "";
            }};
}

using Predicate = bool (*)(const Taxonomy&);
using MakeModule = Function<std::unique_ptr<AttentionModule>(Generator&)>;

// The case's module carries the tag, and so does every module of `with`;
// no module of `without` does.
Property tag(const std::string& name, Predicate predicate, std::vector<MakeModule> with,
             std::vector<MakeModule> without) {
    return {"the tag " + name, [=](const PropertyContext& c) -> std::string {
                const Taxonomy t = static_cast<AttentionModule*>(c.module)->taxonomy();
                if (!predicate(t)) return "general_attention lacks " + name + ": " + t.str();
                Generator g(3);
                for (const MakeModule& make : with)
                    if (const auto m = make(g); !predicate(m->taxonomy()))
                        return m->id() + " lacks " + name + ": " + m->taxonomy().str();
                for (const MakeModule& make : without)
                    if (const auto m = make(g); predicate(m->taxonomy()))
                        return m->id() + " claims " + name + ": " + m->taxonomy().str();
                return "";
            }};
}

// One scalar weight per value vector: weights B×m×n.
Property weights_per_value_vector() {
    return {"weights are B×m×n", [](const PropertyContext& c) -> std::string {
                const Shape s = c.run(c.inputs, c.masks)["weights"].shape();
                const Shape want{c.inputs[0].size(0), c.inputs[0].size(1), c.inputs[1].size(1)};
                return s == want ? "" : "weights " + s.str() + ", expected " + want.str();
            }};
}

// ---- cases ------------------------------------------------------------------------------------------

Case general_case(std::string variant, const Spec& s, std::vector<Shape> inputs, Tensor mask,
                  std::vector<Property> properties, bool training = false) {
    const int64_t d_q = inputs[0][2], d_f = s.self ? inputs[0][2] : inputs[1][2];
    const int64_t d_key = s.key_dim > 0 ? s.key_dim : d_f;
    const bool sampled = s.align == AlignKind::hard;  // one-hot weights: no gradient
    const std::vector<int> key_inputs = s.self       ? std::vector<int>{0}
                                        : s.separate ? std::vector<int>{1, 2}
                                                     : std::vector<int>{1};
    return {.variant = std::move(variant),
            .inputs = std::move(inputs),
            .masks = {mask},
            .make = [=](Generator& g) {
                GeneralAttention::Options o;
                o.feature_dim = d_f;
                o.key_dim = s.key_dim;
                o.value_dim = s.value_dim;
                o.query_is_self = s.self;
                return std::make_unique<GeneralAttention>(make_score(s.score, d_q, d_key, g), make_alignment(s, d_q, g),
                                                          o, g);
            },
            .run = [=](Module* m, In x, Masks masks) {
                auto& attention = as<GeneralAttention>(m);
                Tensor keep = key_mask(masks[0]);
                if (s.causal) keep = combine_masks(keep, causal_mask(x[0].size(1), x[s.self ? 0 : 1].size(1)));
                const AttentionOutput o = s.self       ? attention.forward(x[0], x[0], keep)
                                          : s.separate ? attention.forward(x[0], x[1], x[2], keep)
                                                       : attention.forward(x[0], x[1], keep);
                return Outputs{{"output", o.output}, {"weights", o.weights, !sampled}};
            },
            .reference = [=](const Ref& r) { return general_attention_reference(r, s); },
            .masking = {{.mask = 0, .inputs = key_inputs, .weights = {"weights"}, .zero_when_empty = {"output"},
                         .self = s.self}},
            .properties = std::move(properties),
            .training = training};
}

const Property kSumsToOne = rows_sum_to_one("weights");
// Reversing the features (x[1]) and their mask: c unchanged, a reversed.
const std::vector<Property> kPermutation = {permutation_invariant({1}, {0}, {"output"}),
                                            permutation_equivariant_keys({1}, {0}, {"weights"})};

std::vector<Property> with(std::vector<Property> a, const std::vector<Property>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

const RegisterEntry general_entry(1, "general_attention", {
    general_case("additive, soft, W_K 4×6 and W_V 2×6, 3 queries of 3 over 5 features, padding",
                 {.key_dim = 4, .value_dim = 2}, {Shape{2, 3, 3}, Shape{2, 5, 6}}, keep_first({3, 5}, 5),
                 with({kSumsToOne, convex_in_projected_values()}, kPermutation)),
    general_case("general score, soft, square W_K = W_V 4×4 (a transposed projection is shape-valid)",
                 {.score = ScoreKind::general, .key_dim = 4, .value_dim = 4}, {Shape{2, 3, 4}, Shape{2, 5, 4}},
                 keep_first({4, 2}, 5), with({kSumsToOne, convex_in_projected_values()}, kPermutation)),
    general_case("dot, soft, keys = values = features, one query (m = 1)", {.score = ScoreKind::dot},
                 {Shape{3, 1, 4}, Shape{3, 6, 4}}, keep_first({6, 2, 4}, 6),
                 with({kSumsToOne, convex_combination("output", 1, 0)}, kPermutation)),
    general_case("scaled dot, soft at T = 0.5, W_K 3×5 only: values = features",
                 {.score = ScoreKind::scaled_dot, .key_dim = 3, .T = 0.5}, {Shape{2, 2, 3}, Shape{2, 4, 5}},
                 keep_first({3, 4}, 4), with({kSumsToOne, convex_combination("output", 1, 0)}, kPermutation)),
    general_case("biased general, soft, W_V 2×5 only: keys = features",
                 {.score = ScoreKind::biased_general, .value_dim = 2}, {Shape{2, 3, 3}, Shape{2, 4, 5}},
                 keep_first({4, 1}, 4), with({kSumsToOne, convex_in_projected_values()}, kPermutation)),
    general_case("general score, soft, keys and values given separately",
                 {.score = ScoreKind::general, .separate = true}, {Shape{2, 3, 3}, Shape{2, 5, 4}, Shape{2, 5, 2}},
                 keep_first({5, 3}, 5),
                 {kSumsToOne, convex_combination("output", 2, 0), equal_keys_give_mean_of_values()}),
    general_case("additive, soft, causal and padding masks combined (B×m×n)", {.causal = true},
                 {Shape{2, 4, 3}, Shape{2, 6, 3}}, keep_first({6, 5}, 6), {kSumsToOne}),
    general_case("general score, local-m D = 1 centred on the query index, separate keys and values",
                 {.score = ScoreKind::general, .align = AlignKind::local_m, .separate = true},
                 {Shape{2, 4, 3}, Shape{2, 6, 5}, Shape{2, 6, 2}}, keep_first({6, 3}, 6),
                 {kSumsToOne, convex_combination("output", 2, 0)}),
    general_case("scaled dot, local-p D = 1 predicted from the queries, W_K 3×4",
                 {.score = ScoreKind::scaled_dot, .align = AlignKind::local_p, .key_dim = 3},
                 {Shape{2, 3, 3}, Shape{2, 7, 4}}, keep_first({7, 5}, 7), {bounded("weights", 0, 1)}),
    general_case("activated general, element-wise σ alignment, W_V 3×4",
                 {.score = ScoreKind::activated_general, .align = AlignKind::sigmoid, .value_dim = 3},
                 {Shape{2, 3, 2}, Shape{2, 5, 4}}, keep_first({2, 5}, 5),
                 with({bounded("weights", 0, 1)}, kPermutation)),
    general_case("dot, element-wise ReLU / (Σ ReLU + ε), W_K 4×3 and W_V 2×3",
                 {.score = ScoreKind::dot, .align = AlignKind::relu_sum, .key_dim = 4, .value_dim = 2},
                 {Shape{2, 3, 4}, Shape{2, 5, 3}}, keep_first({5, 3}, 5), kPermutation),
    general_case("additive, hard in evaluation: the arg-max key's value, W_V 2×4",
                 {.align = AlignKind::hard, .value_dim = 2}, {Shape{2, 3, 3}, Shape{2, 5, 4}}, keep_first({3, 5}, 5),
                 with({kSumsToOne}, kPermutation)),
    general_case("general score, hard in training: a sampled key (noise replayed), W_K 3×3, W_V 2×3",
                 {.score = ScoreKind::general, .align = AlignKind::hard, .key_dim = 3, .value_dim = 2},
                 {Shape{2, 4, 2}, Shape{2, 5, 3}}, keep_first({5, 2}, 5), {kSumsToOne}, true),
    general_case("dot, Gumbel-softmax τ = 0.5 in training (noise replayed), W_V 3×4",
                 {.score = ScoreKind::dot, .align = AlignKind::gumbel, .value_dim = 3, .T = 0.5},
                 {Shape{2, 3, 4}, Shape{2, 5, 4}}, keep_first({5, 4}, 5), {kSumsToOne}, true),
    general_case("scaled dot, reinforced self-attention in training: the queries are the features, W_K 3×3, W_V 2×3",
                 {.score = ScoreKind::scaled_dot, .align = AlignKind::reinforced, .key_dim = 3, .value_dim = 2,
                  .self = true},
                 {Shape{2, 5, 3}}, keep_first({5, 3}, 5), {kSumsToOne}, true),
});

// ---- the tag entries 2, 10, 13, 29, 39 ----------------------------------------------------------------

MakeModule co_attention() {
    return [](Generator& g) { return std::make_unique<ParallelCoAttention>(3, 4, 5, g); };
}
MakeModule alternating() {
    return [](Generator& g) { return std::make_unique<AlternatingCoAttention>(3, 4, 5, g); };
}
MakeModule rotatory() {
    return [](Generator& g) { return std::make_unique<RotatoryAttention>(3, 4, 3, g); };
}
MakeModule hierarchical() {
    return [](Generator& g) { return std::make_unique<HierarchicalAttention>(4, 3, g); };
}
MakeModule via_attention() {
    return [](Generator& g) { return std::make_unique<AttentionViaAttention>(3, 2, 4, 5, g); };
}
MakeModule meta_embedding() {
    return [](Generator& g) { return std::make_unique<MetaEmbeddingAttention>(std::vector<int64_t>{3, 5}, 4, g); };
}
MakeModule multi_dimensional() {
    return [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 4, 5, 2, g); };
}
MakeModule multi_head() {
    return [](Generator& g) { return std::make_unique<MultiHeadAttention>(4, 2, g); };
}
MakeModule head_gated() {
    return [](Generator& g) { return std::make_unique<HeadGatedMultiHeadAttention>(4, 2, g); };
}
MakeModule capsule() {
    return [](Generator& g) { return std::make_unique<CapsuleAttention>(2, 3, 4, g); };
}
MakeModule multi_hop() {
    return [](Generator& g) {
        return std::make_unique<MultiHopAttention>(
            3, 3, [](Generator& gen) { return std::make_unique<GeneralScore>(6, 3, gen); },
            MultiHopAttention::Options{}, g);
    };
}

const RegisterEntry singular_features_entry(2, "singular_features_attention", {
    general_case("general attention over one input: additive, soft, W_K 4×6, W_V 2×6",
                 {.key_dim = 4, .value_dim = 2}, {Shape{2, 3, 3}, Shape{2, 5, 6}}, keep_first({4, 5}, 5),
                 {tag("multiplicity=singular", singular_features_attention,
                      {multi_head(), hierarchical(), meta_embedding(), multi_dimensional()},
                      {co_attention(), alternating(), rotatory()})}),
});

const RegisterEntry single_level_entry(10, "single_level_attention", {
    general_case("general attention over one level: general score, soft",
                 {.score = ScoreKind::general}, {Shape{2, 2, 3}, Shape{2, 4, 5}}, keep_first({4, 2}, 4),
                 {tag("levels=single", single_level_attention,
                      {meta_embedding(), co_attention(), multi_head(), multi_dimensional()},
                      {hierarchical(), via_attention()})}),
});

const RegisterEntry single_representational_entry(13, "single_representational_attention", {
    general_case("general attention over one representation: dot, soft, W_V 3×4",
                 {.score = ScoreKind::dot, .value_dim = 3}, {Shape{2, 3, 4}, Shape{2, 5, 4}}, keep_first({5, 3}, 5),
                 {tag("representations=single", single_representational_attention,
                      {hierarchical(), via_attention(), co_attention(), multi_head()}, {meta_embedding()})}),
});

const RegisterEntry single_dimensional_entry(29, "single_dimensional_attention", {
    general_case("general attention, one weight per value vector: scaled dot, element-wise σ, W_K 3×4",
                 {.score = ScoreKind::scaled_dot, .align = AlignKind::sigmoid, .key_dim = 3},
                 {Shape{2, 3, 3}, Shape{2, 4, 4}}, keep_first({4, 2}, 4),
                 {weights_per_value_vector(),
                  tag("dimensionality=single", single_dimensional_attention,
                      {co_attention(), hierarchical(), meta_embedding(), multi_head()}, {multi_dimensional()})}),
});

const RegisterEntry singular_query_entry(39, "singular_query_attention", {
    general_case("general attention with one query per prediction, here self-attention: scaled dot, W_K = W_V 3×3",
                 {.score = ScoreKind::scaled_dot, .key_dim = 3, .value_dim = 3, .self = true}, {Shape{2, 4, 3}},
                 keep_first({4, 3}, 4),
                 {tag("query_multiplicity=singular", singular_query_attention,
                      {co_attention(), hierarchical(), meta_embedding(), multi_dimensional()},
                      {multi_head(), multi_hop(), capsule(), head_gated()})}),
});

}  // namespace
