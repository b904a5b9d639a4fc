// The score functions, catalog entries 15–21 (attention/scores.hpp): their
// independent references and registry entries (tests/grad/catalog.hpp), and
// each entry's property tests and reference values in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/scores.hpp"
#include "tensor/ops.hpp"
#include "tests/function.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent references: the catalog's formulas in plain loops ------------------
// Each takes the queries Q (B×m×d_q) and keys K (B×n×d_k) and gives E (B×m×n).

// 15: e_l = wᵀ act(W_1 q + W_2 k_l + b), or without b (the module then has none)
Array additive_score_reference(const Ref& r, double (*act)(double), bool bias = true) {
    const Array &Q = r.x[0], &K = r.x[1];
    const Array W_1 = r.p["W_1"], W_2 = r.p["W_2"];
    const Vec w = vec(r.p["w"]), b = bias ? vec(r.p["b"]) : Vec(w.size(), 0.0);
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t bb = 0; bb < Q.size(0); ++bb)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l) {
                const Vec pre = add(add(matvec(W_1, row(Q, bb, i)), matvec(W_2, row(K, bb, l))), b);
                E(bb, i, l) = dot(w, each(pre, act));
            }
    return E;
}

// 16 and 17: e_l = qᵀ k_l, divided by √d_k when scaled
Array dot_score_reference(const Ref& r, bool scaled) {
    const Array &Q = r.x[0], &K = r.x[1];
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l)
                E(b, i, l) = dot(row(Q, b, i), row(K, b, l)) / (scaled ? std::sqrt(double(K.size(2))) : 1.0);
    return E;
}

// 18, 19, 20: e_l = act(k_lᵀ (W q + b_vec) + b_scalar), W d_k×d_q
Array general_score_reference(const Ref& r, bool vector_bias, bool scalar_bias, double (*act)(double)) {
    const Array &Q = r.x[0], &K = r.x[1];
    const Array W = r.p["W"];
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i) {
            Vec Wq = matvec(W, row(Q, b, i));
            if (vector_bias) Wq = add(Wq, vec(r.p["b"]));
            for (int64_t l = 0; l < K.size(1); ++l) {
                const double e = dot(row(K, b, l), Wq) + (scalar_bias ? r.p["b"][0] : 0.0);
                E(b, i, l) = act(e);
            }
        }
    return E;
}

// 21: e_l = β qᵀk_l / (‖q‖ ‖k_l‖ + ε), β per score (beta(b, i)) or one for all
Array cosine_reference(const Array& Q, const Array& K, const Function<double(int64_t, int64_t)>& beta) {
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l) {
                const Vec q = row(Q, b, i), k = row(K, b, l);
                E(b, i, l) = beta(b, i) * dot(q, k) / (norm(q) * norm(k) + 1e-8);
            }
    return E;
}

// 21: e_l = −‖q − k_l‖, or −‖q − k_l‖²
Array negative_distance_reference(const Ref& r, bool squared) {
    const Array &Q = r.x[0], &K = r.x[1];
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l) {
                const Vec diff = sub(row(Q, b, i), row(K, b, l));
                E(b, i, l) = squared ? -dot(diff, diff) : -norm(diff);
            }
    return E;
}

// 81: e_l = pᵀ (tanh(U q) ∘ tanh(V k_l)), U r×d_q, V r×d_k, p r
Array low_rank_bilinear_score_reference(const Ref& r) {
    const Array &Q = r.x[0], &K = r.x[1];
    const Array U = r.p["U"], V = r.p["V"];
    const Vec p = vec(r.p["p"]);
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l) {
                const Vec Uq = each(matvec(U, row(Q, b, i)), std::tanh);
                const Vec Vk = each(matvec(V, row(K, b, l)), std::tanh);
                E(b, i, l) = dot(p, hadamard(Uq, Vk));
            }
    return E;
}

double identity(double x) { return x; }
Outputs scores(const Var& e) { return {{"scores", e}}; }
std::vector<Expected> expect_scores(Array E) { return {{"scores", std::move(E)}}; }

// ---- the registry entries ---------------------------------------------------------------
const RegisterEntry additive_entry(15, "additive_score", {
    {.variant = "2 queries of 3, 4 keys of 5, d_w 6",
     .inputs = {Shape{2, 2, 3}, Shape{2, 4, 5}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(3, 5, 6, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<AdditiveScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(additive_score_reference(r, tanh_)); }},
    {.variant = "keys projected once, then scored (Bahdanau's decoder)",
     .inputs = {Shape{2, 1, 3}, Shape{2, 4, 5}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(3, 5, 4, g); },
     .run = [](Module* m, In x, Masks) {
         auto& s = as<AdditiveScore>(m);
         return scores(s.score_projected(x[0], s.project_keys(x[1])));
     },
     .reference = [](const Ref& r) { return expect_scores(additive_score_reference(r, tanh_)); }},
    {.variant = "relu activation",
     .inputs = {Shape{2, 3, 2}, Shape{2, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(2, 3, 5, g, Activation::relu); },
     .run = [](Module* m, In x, Masks) { return scores(as<AdditiveScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(additive_score_reference(r, relu)); }},
    {.variant = "sigmoid activation",
     .inputs = {Shape{2, 3, 2}, Shape{2, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(2, 3, 5, g, Activation::sigmoid); },
     .run = [](Module* m, In x, Masks) { return scores(as<AdditiveScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(additive_score_reference(r, sigmoid)); }},
    {.variant = "bias = false (Pointer Networks, Bahdanau's decoder): d_q 3, d_k 5, d_w 4",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 5}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(3, 5, 4, g, Activation::tanh, false); },
     .run = [](Module* m, In x, Masks) { return scores(as<AdditiveScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(additive_score_reference(r, tanh_, false)); }},
});

const RegisterEntry dot_entry(16, "dot_score", {
    {.variant = "3 queries, 4 keys of 5",
     .inputs = {Shape{2, 3, 5}, Shape{2, 4, 5}},
     .run = [](Module*, In x, Masks) { return scores(DotScore().score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(dot_score_reference(r, false)); }},
});

const RegisterEntry scaled_dot_entry(17, "scaled_dot_score", {
    {.variant = "3 queries, 4 keys of 5",
     .inputs = {Shape{2, 3, 5}, Shape{2, 4, 5}},
     .run = [](Module*, In x, Masks) { return scores(ScaledDotScore().score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(dot_score_reference(r, true)); }},
});

const RegisterEntry general_entry(18, "general_score", {
    {.variant = "d_q 3 ≠ d_k 4",
     .inputs = {Shape{2, 2, 3}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<GeneralScore>(3, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<GeneralScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(general_score_reference(r, false, false, identity)); }},
    {.variant = "square W (d_q = d_k = 4): a transposed W gives other values, not a shape error",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<GeneralScore>(4, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<GeneralScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(general_score_reference(r, false, false, identity)); }},
});

const RegisterEntry biased_general_entry(19, "biased_general_score", {
    {.variant = "d_q 3 ≠ d_k 4",
     .inputs = {Shape{2, 2, 3}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<BiasedGeneralScore>(3, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<BiasedGeneralScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(general_score_reference(r, true, false, identity)); }},
    {.variant = "square W (d_q = d_k = 4): a transposed W gives other values, not a shape error",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<BiasedGeneralScore>(4, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<BiasedGeneralScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(general_score_reference(r, true, false, identity)); }},
});

const RegisterEntry activated_general_entry(20, "activated_general_score", {
    {.variant = "tanh, d_q 3 ≠ d_k 4",
     .inputs = {Shape{2, 2, 3}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<ActivatedGeneralScore>(3, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<ActivatedGeneralScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(general_score_reference(r, false, true, tanh_)); },
     .properties = {bounded("scores", -1, 1)}},
    {.variant = "sigmoid, d_q 4 ≠ d_k 2",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 2}},
     .make = [](Generator& g) { return std::make_unique<ActivatedGeneralScore>(4, 2, g, Activation::sigmoid); },
     .run = [](Module* m, In x, Masks) { return scores(as<ActivatedGeneralScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(general_score_reference(r, false, true, sigmoid)); }},
});

// Luong's location score: e_l = (W_a h_t)_l, one learnt score per source
// position l < n of the n_max the score was built for, whatever the keys hold.
Array location_score_reference(const Ref& r) {
    const Array &Q = r.x[0], &K = r.x[1];
    const Array W = r.p["W_a"];  // n_max×d_q
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l) {
                double e = 0;
                for (int64_t d = 0; d < Q.size(2); ++d) e += W(l, d) * Q(b, i, d);
                E(b, i, l) = e;
            }
    return E;
}

SimilarityScore::Options similarity(SimilarityScore::Kind kind, bool squared = false, bool learn_beta = false) {
    SimilarityScore::Options o;
    o.kind = kind;
    o.squared = squared;
    o.beta = 2.5;
    o.learn_beta = learn_beta;
    return o;
}

const RegisterEntry similarity_entry(21, "similarity_score", {
    {.variant = "cosine with a learned key strength",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .make = [](Generator&) {
         return std::make_unique<SimilarityScore>(similarity(SimilarityScore::Kind::cosine, false, true));
     },
     .run = [](Module* m, In x, Masks) { return scores(as<SimilarityScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) {
         const double beta = r.p["beta"][0];
         return expect_scores(cosine_reference(r.x[0], r.x[1], [&](int64_t, int64_t) { return beta; }));
     },
     .properties = {bounded("scores", -6, 6)}},
    {.variant = "cosine with a fixed key strength 2.5",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .run = [](Module*, In x, Masks) {
         return scores(SimilarityScore(similarity(SimilarityScore::Kind::cosine)).score(x[0], x[1]));
     },
     .reference = [](const Ref& r) {
         return expect_scores(cosine_reference(r.x[0], r.x[1], [](int64_t, int64_t) { return 2.5; }));
     },
     .properties = {bounded("scores", -2.5, 2.5)}},
    {.variant = "cosine with a key strength per query (NTM): β = exp(x[2])",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}, Shape{2, 3, 1}},
     .run = [](Module*, In x, Masks) { return scores(SimilarityScore().cosine(x[0], x[1], exp(x[2]))); },
     .reference = [](const Ref& r) {
         const Array& beta = r.x[2];
         return expect_scores(
             cosine_reference(r.x[0], r.x[1], [&](int64_t b, int64_t i) { return std::exp(beta(b, i, 0)); }));
     }},
    {.variant = "negative distance",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .run = [](Module*, In x, Masks) {
         return scores(SimilarityScore(similarity(SimilarityScore::Kind::negative_distance)).score(x[0], x[1]));
     },
     .reference = [](const Ref& r) { return expect_scores(negative_distance_reference(r, false)); }},
    {.variant = "negative squared distance",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .run = [](Module*, In x, Masks) {
         return scores(
             SimilarityScore(similarity(SimilarityScore::Kind::negative_distance, true)).score(x[0], x[1]));
     },
     .reference = [](const Ref& r) { return expect_scores(negative_distance_reference(r, true)); }},
});

// Not one of the catalog's 80: the location score of Luong et al. (2015),
// a row of the score table (--score location) since the first trainers.
const RegisterEntry location_entry(84, "location_score", {
    {.variant = "n 4 of n_max 6, d_q 3: the keys' values unread",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 5}},
     .make = [](Generator& g) { return std::make_unique<LocationScore>(3, 6, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<LocationScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(location_score_reference(r)); },
     .properties = {independent_of(1, {"scores"})}},
    {.variant = "n = n_max 5, one query",
     .inputs = {Shape{2, 1, 4}, Shape{2, 5, 2}},
     .make = [](Generator& g) { return std::make_unique<LocationScore>(4, 5, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<LocationScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(location_score_reference(r)); }},
});

const RegisterEntry low_rank_bilinear_entry(81, "low_rank_bilinear_score", {
    {.variant = "d_q 3, d_k 5, rank 4",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 5}},
     .make = [](Generator& g) { return std::make_unique<LowRankBilinearScore>(3, 5, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<LowRankBilinearScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(low_rank_bilinear_score_reference(r)); },
     .properties = {permutation_equivariant_keys({1}, {}, {"scores"})}},
    {.variant = "square projections, d_q = d_k = rank = 4",
     .inputs = {Shape{2, 2, 4}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<LowRankBilinearScore>(4, 4, 4, g); },
     .run = [](Module* m, In x, Masks) { return scores(as<LowRankBilinearScore>(m).score(x[0], x[1])); },
     .reference = [](const Ref& r) { return expect_scores(low_rank_bilinear_score_reference(r)); }},
});

// B×m×d from rows.
Var batch(std::vector<real> values, int64_t m, int64_t d) {
    return Var(Tensor::from(std::move(values), Shape{1, m, d}));
}

Var soft(const Var& scores) { return SoftAlignment().align({scores, Tensor(), Var(), Tensor()}); }

}  // namespace

// ---- 15. additive_score ----------------------------------------------------------------

TEST_CASE("additive_score: w = 0 gives uniform weights") {
    Generator gen(1);
    AdditiveScore score(3, 4, 5, gen);
    score.w.value().fill_(0);
    const Var a = soft(score.score(normal_var({2, 3, 3}, gen), normal_var({2, 6, 4}, gen)));
    for (int64_t i = 0; i < a.numel(); ++i) CHECK(std::abs(a.value()[i] - 1.0 / 6) <= 1e-12);
}

TEST_CASE("additive_score: the broadcast form equals a loop over (query, key) pairs") {
    Generator gen(2);
    const int64_t B = 2, m = 3, n = 4, dq = 3, dk = 5, dw = 6;
    AdditiveScore score(dq, dk, dw, gen);
    const Var Q = normal_var({B, m, dq}, gen), K = normal_var({B, n, dk}, gen);
    const Tensor E = score.score(Q, K).value();
    const Tensor &W1 = score.W_1.value(), &W2 = score.W_2.value(), &b = score.b.value(), &w = score.w.value();
    for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t l = 0; l < n; ++l) {
                // e_l = wᵀ tanh(W_1 q + W_2 k_l + b), one pair at a time
                double e = 0;
                for (int64_t h = 0; h < dw; ++h) {
                    double pre = b[h];
                    for (int64_t j = 0; j < dq; ++j) pre += W1[h * dq + j] * Q.value().at({bb, i, j});
                    for (int64_t j = 0; j < dk; ++j) pre += W2[h * dk + j] * K.value().at({bb, l, j});
                    e += w[h] * std::tanh(pre);
                }
                CHECK(std::abs(E.at({bb, i, l}) - e) <= 1e-12);
            }
}

TEST_CASE("additive_score: projecting the keys once per sequence gives identical scores at every step") {
    Generator gen(3);
    AdditiveScore score(4, 6, 5, gen);
    const Var H = normal_var({2, 7, 6}, gen);
    const Var projected = score.project_keys(H);  // H U_aᵀ, once
    for (int step = 0; step < 3; ++step) {
        const Var s = normal_var({2, 1, 4}, gen);
        check_close(score.score_projected(s, projected).value(), score.score(s, H).value(), 0);
    }
}

TEST_CASE("additive_score: without the nonlinearity, the weights ignore the query (seed 003's linear concat)") {
    // e_l = wᵀ(W_1 q + W_2 k_l + b) = (W_1ᵀw)ᵀq + (W_2ᵀw)ᵀk_l + wᵀb: the query's
    // term is the same for every key, and softmax removes it.
    Generator gen(4);
    AdditiveScore linear(3, 4, 5, gen, Activation::identity);
    AdditiveScore with_tanh(3, 4, 5, gen);
    const Var K = normal_var({1, 6, 4}, gen);
    const Var q1 = normal_var({1, 1, 3}, gen), q2 = mul(normal_var({1, 1, 3}, gen), 3.0);
    check_close(soft(linear.score(q1, K)).value(), soft(linear.score(q2, K)).value(), 1e-12);
    const Tensor a1 = soft(with_tanh.score(q1, K)).value(), a2 = soft(with_tanh.score(q2, K)).value();
    double gap = 0;
    for (int64_t i = 0; i < a1.numel(); ++i) gap = std::max(gap, std::abs(a1[i] - a2[i]));
    CHECK(gap > 1e-3);
}

TEST_CASE("additive_score: shape errors name the score and the shapes") {
    Generator gen(5);
    AdditiveScore score(3, 4, 5, gen);
    CHECK_THROWS_WITH_AS(score.score(normal_var({2, 1, 3}, gen), normal_var({3, 6, 4}, gen)),
                         "additive_score: queries 2×1×3 and keys 3×6×4 need the same batch size",
                         std::invalid_argument);
    CHECK_THROWS_AS(score.score(normal_var({2, 1, 4}, gen), normal_var({2, 6, 4}, gen)), std::invalid_argument);
}

// ---- 16. dot_score ----------------------------------------------------------------------

TEST_CASE("dot_score: q = (1, 1), keys (1, 1), (0, 0) → e = (2, 0), softmax (0.880797, 0.119203)") {
    const Var q = batch({1, 1}, 1, 2), K = batch({1, 1, 0, 0}, 2, 2);
    const Var e = DotScore().score(q, K);
    check_close(e.value(), {2, 0});
    check_close(soft(e).value(), {0.880797, 0.119203});
    // Scaling q by s scales e by s.
    check_close(DotScore().score(mul(q, -2.5), K).value(), {-5, 0});
    CHECK_THROWS_WITH_AS(DotScore().score(batch({1, 1, 1}, 1, 3), K),
                         "dot_score: queries 1×1×3 and keys 1×2×2 need the same width (d_q = d_k)",
                         std::invalid_argument);
}

// ---- 17. scaled_dot_score ------------------------------------------------------------------

TEST_CASE("scaled_dot_score: the same input → e = (1.414214, 0), weights (0.804430, 0.195570)") {
    const Var e = ScaledDotScore().score(batch({1, 1}, 1, 2), batch({1, 1, 0, 0}, 2, 2));
    check_close(e.value(), {1.414214, 0});
    check_close(soft(e).value(), {0.804430, 0.195570});
}

TEST_CASE("scaled_dot_score: for iid N(0,1) entries, Var(e) = 1 ± 0.1 for every d_k; unscaled it is ≈ d_k") {
    // 10⁴ independent (q, k) pairs per width, seed 17.
    const int64_t samples = 10000;
    for (int64_t d_k : {4, 64, 256}) {
        CAPTURE(d_k);
        Generator gen(17);
        const Var q = normal_var({samples, 1, d_k}, gen), k = normal_var({samples, 1, d_k}, gen);
        auto variance = [&](const Tensor& e) {
            double mean = 0, sq = 0;
            for (int64_t i = 0; i < samples; ++i) mean += e[i];
            mean /= samples;
            for (int64_t i = 0; i < samples; ++i) sq += (e[i] - mean) * (e[i] - mean);
            return sq / (samples - 1);
        };
        const double scaled = variance(ScaledDotScore().score(q, k).value());
        const double unscaled = variance(DotScore().score(q, k).value());
        CHECK(std::abs(scaled - 1) <= 0.1);
        CHECK(std::abs(unscaled / static_cast<double>(d_k) - 1) <= 0.1);
    }
}

// ---- 18. general_score ----------------------------------------------------------------------

TEST_CASE("general_score: W = I is dot_score; Luong's h_tᵀ W_a h̄_s is the same form with W_a = Wᵀ") {
    Generator gen(6);
    GeneralScore square(4, 4, gen);
    square.W.value().fill_(0);
    for (int64_t i = 0; i < 4; ++i) square.W.value().at({i, i}) = 1;
    const Var Q = normal_var({2, 3, 4}, gen), K = normal_var({2, 5, 4}, gen);
    check_close(square.score(Q, K).value(), DotScore().score(Q, K).value());

    // Non-square W (d_k 5 × d_q 3): e_l = k_lᵀ W q, and with W_a = Wᵀ (d_q×d_k) q ᵀW_a k_l.
    GeneralScore general(3, 5, gen);
    const Var q = normal_var({1, 2, 3}, gen), k = normal_var({1, 4, 5}, gen);
    const Tensor E = general.score(q, k).value();
    const Tensor& W = general.W.value();
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t l = 0; l < 4; ++l) {
            double ours = 0, luong = 0;
            for (int64_t r = 0; r < 5; ++r)
                for (int64_t c = 0; c < 3; ++c) {
                    ours += k.value().at({0, l, r}) * W.at({r, c}) * q.value().at({0, i, c});   // k_lᵀ W q
                    luong += q.value().at({0, i, c}) * W.at({r, c}) * k.value().at({0, l, r});  // qᵀ (Wᵀ) k_l
                }
            CHECK(std::abs(E.at({0, i, l}) - ours) <= 1e-12);
            CHECK(std::abs(E.at({0, i, l}) - luong) <= 1e-12);
        }
}

// ---- 19. biased_general_score --------------------------------------------------------------------

TEST_CASE("biased_general_score: b = 0 is general_score; W = 0 gives a query-independent prior kᵀb") {
    Generator gen(7);
    BiasedGeneralScore biased(3, 4, gen);
    GeneralScore general(3, 4, gen);
    general.W.value().copy_(biased.W.value());
    const Var Q = normal_var({2, 3, 3}, gen), K = normal_var({2, 5, 4}, gen);
    biased.b.value().fill_(0);
    check_close(biased.score(Q, K).value(), general.score(Q, K).value());

    biased.b.value().copy_(Tensor::from({0.5, -1, 2, 0.25}));
    biased.W.value().fill_(0);
    const Tensor e1 = biased.score(Q, K).value(), e2 = biased.score(mul(Q, 7.0), K).value();
    check_close(e1, e2);
    CHECK(std::abs(e1.at({0, 0, 0}) - (0.5 * K.value().at({0, 0, 0}) - K.value().at({0, 0, 1}) +
                                        2 * K.value().at({0, 0, 2}) + 0.25 * K.value().at({0, 0, 3}))) <= 1e-12);
}

// ---- 20. activated_general_score -----------------------------------------------------------------

TEST_CASE("activated_general_score: with tanh, max/min softmax weight ≤ e² = 7.389056; identity with b = 0 is general_score") {
    Generator gen(8);
    ActivatedGeneralScore score(3, 4, gen);
    score.W.value().copy_(mul(score.W.value(), 50.0));  // saturate the tanh
    const Var Q = normal_var({4, 2, 3}, gen), K = normal_var({4, 9, 4}, gen);
    const Tensor a = soft(score.score(Q, K)).value();
    CHECK(std::abs(std::exp(2.0) - 7.389056) <= 1e-6);
    for (int64_t r = 0; r < 8; ++r) {
        double hi = 0, lo = 1;
        for (int64_t l = 0; l < 9; ++l) hi = std::max(hi, a[r * 9 + l]), lo = std::min(lo, a[r * 9 + l]);
        CHECK(hi / lo <= std::exp(2.0) * (1 + 1e-12));  // reached when the tanh saturates
    }

    ActivatedGeneralScore linear(3, 4, gen, Activation::identity);
    linear.b.value().fill_(0);
    GeneralScore general(3, 4, gen);
    general.W.value().copy_(linear.W.value());
    check_close(linear.score(Q, K).value(), general.score(Q, K).value());
}

// ---- 21. similarity_score -------------------------------------------------------------------------

TEST_CASE("similarity_score: cos((1, 0), (1, 1)) = 0.707107, invariant to positive rescaling") {
    SimilarityScore cosine;
    check_close(cosine.score(batch({1, 0}, 1, 2), batch({1, 1}, 1, 2)).value(), {0.707107});
    Generator gen(9);
    const Var Q = normal_var({2, 3, 5}, gen), K = normal_var({2, 4, 5}, gen);
    const Tensor e = cosine.score(Q, K).value();
    check_close(cosine.score(mul(Q, 3.5), mul(K, 0.2)).value(), e, 1e-7);
    for (int64_t i = 0; i < e.numel(); ++i) CHECK(std::abs(e[i]) <= 1);
}

TEST_CASE("similarity_score: as β grows the softmax weights approach one-hot at the arg-max") {
    Generator gen(10);
    const Var q = normal_var({1, 1, 4}, gen), K = normal_var({1, 6, 4}, gen);
    const Tensor e = SimilarityScore().score(q, K).value();
    const int64_t best = static_cast<int64_t>(argmax(e, -1).item());
    double previous = 0;
    for (real beta : {1.0, 10.0, 100.0, 1000.0}) {
        SimilarityScore::Options o;
        o.beta = beta;
        const real top = soft(SimilarityScore(o).score(q, K)).value()[best];
        CHECK(top > previous);
        previous = top;
    }
    CHECK(previous > 0.999);
}

TEST_CASE("similarity_score: a zero vector gives score 0 and a finite gradient, never NaN") {
    Var q(Tensor::zeros(Shape{1, 1, 3}), true);
    Var K(Tensor::from({1, 2, 3, 0, 0, 0}, Shape{1, 2, 3}), true);
    const Var e = SimilarityScore().score(q, K);
    check_close(e.value(), {0, 0});
    sum(e).backward();
    for (const Tensor& g : {q.grad(), K.grad()})
        for (int64_t i = 0; i < g.numel(); ++i) CHECK(std::isfinite(g[i]));

    SimilarityScore::Options o;
    o.kind = SimilarityScore::Kind::negative_distance;
    Var p(Tensor::from({1, 2, 3}, Shape{1, 1, 3}), true);
    const Var d = SimilarityScore(o).score(p, K);  // −‖p − k_0‖ = 0 exactly where p = k_0
    CHECK(std::abs(d.value()[0]) <= 1e-12);
    CHECK(std::abs(d.value()[1] + std::sqrt(14.0)) <= 1e-12);
    sum(d).backward();
    for (int64_t i = 0; i < p.grad().numel(); ++i) CHECK(std::isfinite(p.grad()[i]));
}

TEST_CASE("similarity_score: negative distance and its squared option") {
    SimilarityScore::Options o;
    o.kind = SimilarityScore::Kind::negative_distance;
    const Var q = batch({0, 0}, 1, 2), K = batch({3, 4, 1, 0}, 2, 2);
    check_close(SimilarityScore(o).score(q, K).value(), {-5, -1});
    o.squared = true;
    check_close(SimilarityScore(o).score(q, K).value(), {-25, -1});
}
