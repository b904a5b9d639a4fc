// Sequence variants, catalog entries 53, 55 and 56 (attention/sequence_variants.hpp):
// their independent references and registry entries (tests/grad/catalog.hpp),
// and each entry's property tests and hand-computed values in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/query_types.hpp"
#include "attention/scores.hpp"
#include "attention/sequence_variants.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent references: the catalog's formulas in plain loops ------------------

// 53, one decoder step of example b (Xu et al. 2015, soft attention):
//   e_i = wᵀ tanh(W_1 h + W_2 a_i + b)    f_att, the additive score (entry 15)
//   α   = softmax_i(e) over the kept locations
//   β   = σ(w_βᵀ h + b_β)                 (1 when not gated)
//   ẑ   = β Σ_i α_i a_i
// A B×L×D, h d_h; score.W_1 d_w×d_h, score.W_2 d_w×D, score.b d_w, score.w d_w,
// w_beta d_h, b_beta 1 → ẑ D, α L, β.
struct SoftStep {
    Vec z, alpha;
    double beta;
};
SoftStep soft_step_reference(const Ref& r, const Array& A, int64_t b, const Vec& h, const Vec& keep, bool gated) {
    const Array W_1 = r.p["score.W_1"], W_2 = r.p["score.W_2"];
    const Vec bias = vec(r.p["score.b"]), w = vec(r.p["score.w"]);
    const int64_t L = A.size(1), D = A.size(2);
    Vec e(static_cast<size_t>(L));
    for (int64_t i = 0; i < L; ++i) {
        const Vec pre = add(add(matvec(W_1, h), matvec(W_2, row(A, b, i))), bias);
        e[static_cast<size_t>(i)] = dot(w, testing::each(pre, [](double x) { return std::tanh(x); }));
    }
    SoftStep s;
    s.alpha = softmax(e, keep);
    s.beta = gated ? sigmoid(dot(vec(r.p["w_beta"]), h) + r.p["b_beta"][0]) : 1.0;
    s.z = Vec(static_cast<size_t>(D), 0.0);
    for (int64_t i = 0; i < L; ++i) s.z = add(s.z, scale(row(A, b, i), s.alpha[static_cast<size_t>(i)]));
    s.z = scale(s.z, s.beta);
    return s;
}

// 53, the doubly stochastic penalty over a caption:
//   λ · mean_b Σ_i (1 − Σ_t m_bt α_bti)²      α B×T×L, step mask m B×T (empty: all 1)
double penalty_reference(const Array& alpha, double lambda, const Array& step_mask) {
    const int64_t B = alpha.size(0), T = alpha.size(1), L = alpha.size(2);
    double total = 0;
    for (int64_t b = 0; b < B; ++b) {
        const Vec m = keep_row(step_mask, b, T);
        for (int64_t i = 0; i < L; ++i) {
            double received = 0;
            for (int64_t t = 0; t < T; ++t) received += m[static_cast<size_t>(t)] * alpha(b, t, i);
            total += (1 - received) * (1 - received);
        }
    }
    return lambda * total / static_cast<double>(B);
}

// softmax over the last axis of X B×T×L, in plain loops (the penalty cases feed it).
Array softmax_rows(const Array& X) {
    Array out(X.shape());
    for (int64_t b = 0; b < X.size(0); ++b)
        for (int64_t t = 0; t < X.size(1); ++t) set_row(out, b, t, softmax(row(X, b, t)));
    return out;
}

// The penalty is one number for the batch; cases return it as a 1-vector,
// because the masking test reads every output's first axis.
Array scalar(double v) {
    Array a(std::vector<int64_t>{1});
    a[0] = v;
    return a;
}
Var as_vector(const Var& penalty) { return reshape(penalty, {1}); }

// 53, one step: x = {A B×L×D, h B×d_h} → output B×D, weights B×L, gate B×1
std::vector<Expected> doubly_stochastic_step_reference(const Ref& r, bool gated) {
    const Array &A = r.x[0], &H = r.x[1];
    const int64_t B = A.size(0), L = A.size(1), D = A.size(2);
    Array z({B, D}), alpha({B, L}), beta({B, 1});
    for (int64_t b = 0; b < B; ++b) {
        const SoftStep s = soft_step_reference(r, A, b, row(H, b), keep_row(mask_or_all(r, 0), b, L), gated);
        set_row(z, b, s.z);
        set_row(alpha, b, s.alpha);
        beta(b, 0) = s.beta;
    }
    return {{"output", z}, {"weights", alpha}, {"gate", beta}};
}

// 53, T steps from one memory: x = {A B×L×D, H B×T×d_h (h_{t−1} for each t)}
// → output B×T×D, weights B×T×L, gate B×T×1, penalty λ mean_b Σ_i (1 − Σ_t α_ti)²
std::vector<Expected> doubly_stochastic_caption_reference(const Ref& r, double lambda) {
    const Array &A = r.x[0], &H = r.x[1];
    const int64_t B = A.size(0), L = A.size(1), D = A.size(2), T = H.size(1);
    Array z({B, T, D}), alpha({B, T, L}), beta({B, T, 1});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            const SoftStep s =
                soft_step_reference(r, A, b, row(H, b, t), keep_row(mask_or_all(r, 0), b, L), /*gated=*/true);
            set_row(z, b, t, s.z);
            set_row(alpha, b, t, s.alpha);
            beta(b, t, 0) = s.beta;
        }
    return {{"output", z}, {"weights", alpha}, {"gate", beta},
            {"penalty", scalar(penalty_reference(alpha, lambda, Array()))}};
}

// 55 (Raffel & Ellis 2015):  e_t = tanh(wᵀ h_t + b),  α = softmax_t(e),  c = Σ_t α_t h_t
// H B×T×d, w d, b 1 → c B×1×d, α B×1×T
std::vector<Expected> feed_forward_reference(const Ref& r) {
    const Array& H = r.x[0];
    const Vec w = vec(r.p["w"]);
    const double bias = r.p["b"][0];
    const int64_t B = H.size(0), T = H.size(1), d = H.size(2);
    Array c({B, 1, d}), alpha({B, 1, T});
    for (int64_t b = 0; b < B; ++b) {
        Vec e(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) e[static_cast<size_t>(t)] = std::tanh(dot(w, row(H, b, t)) + bias);
        const Vec a = softmax(e, keep_row(mask_or_all(r, 0), b, T));
        Vec ctx(static_cast<size_t>(d), 0.0);
        for (int64_t t = 0; t < T; ++t) ctx = add(ctx, scale(row(H, b, t), a[static_cast<size_t>(t)]));
        set_row(c, b, 0, ctx);
        set_row(alpha, b, 0, a);
    }
    return {{"output", c}, {"weights", alpha}};
}

// 56, the diversity penalty of one example:  P = ‖A Aᵀ − I‖_F² = Σ_{k,k'} (Σ_j A_kj A_k'j − δ_kk')²
// A B×r×n → P of example b.
double structured_penalty_reference(const Array& A, int64_t b) {
    const int64_t rows = A.size(1);
    double P = 0;
    for (int64_t k = 0; k < rows; ++k)
        for (int64_t k2 = 0; k2 < rows; ++k2) {
            const double g = dot(row(A, b, k), row(A, b, k2)) - (k == k2 ? 1.0 : 0.0);
            P += g * g;
        }
    return P;
}

// 56 (Lin et al. 2017):  A = softmax_row(W_s2 tanh(W_s1 Hᵀ))  r×n,  M = A H  r×d,  P = ‖AAᵀ − I‖_F²
// H B×n×d, W_s1 d_a×d, W_s2 r×d_a → M B×r×d, A B×r×n, P B
std::vector<Expected> structured_reference(const Ref& r) {
    const Array& H = r.x[0];
    const Array W_s1 = r.p["W_s1"], W_s2 = r.p["W_s2"];
    const int64_t B = H.size(0), n = H.size(1), d = H.size(2), rows = W_s2.size(0);
    Array M({B, rows, d}), A({B, rows, n}), P({B});
    for (int64_t b = 0; b < B; ++b) {
        // column j of tanh(W_s1 Hᵀ): tanh(W_s1 h_j)
        std::vector<Vec> hidden;
        for (int64_t j = 0; j < n; ++j) hidden.push_back(testing::each(matvec(W_s1, row(H, b, j)), [](double x) {
                                            return std::tanh(x);
                                        }));
        for (int64_t k = 0; k < rows; ++k) {
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) e[static_cast<size_t>(j)] = dot(row(W_s2, k), hidden[static_cast<size_t>(j)]);
            const Vec a = softmax(e, keep_row(mask_or_all(r, 0), b, n));
            set_row(A, b, k, a);
            Vec m(static_cast<size_t>(d), 0.0);
            for (int64_t j = 0; j < n; ++j) m = add(m, scale(row(H, b, j), a[static_cast<size_t>(j)]));
            set_row(M, b, k, m);
        }
        P(b) = structured_penalty_reference(A, b);
    }
    return {{"output", M}, {"weights", A}, {"penalty", P}};
}

// ---- properties written for these entries ----------------------------------------------

// 55: the scores are tanh-bounded, so within a row max α / min α ≤ e² over the kept steps.
Property weight_ratio_at_most_e2() {
    return {"max α / min α ≤ e² within a row", [](const PropertyContext& c) -> std::string {
                const Array a(c.run(c.inputs, c.masks)["weights"]);
                const int64_t B = a.size(0), T = a.size(2);
                const Array mask = c.masks.empty() ? Array() : Array(c.masks[0]);
                for (int64_t b = 0; b < B; ++b) {
                    const Vec keep = keep_row(mask, b, T);
                    double hi = 0, lo = INFINITY;
                    for (int64_t t = 0; t < T; ++t)
                        if (keep[static_cast<size_t>(t)] != 0) hi = std::max(hi, a(b, 0, t)), lo = std::min(lo, a(b, 0, t));
                    if (lo == INFINITY) continue;
                    if (hi / lo > std::exp(2.0) * (1 + 1e-12)) {
                        std::ostringstream os;
                        os << "example " << b << ": max/min weight " << hi / lo << " > e²";
                        return os.str();
                    }
                }
                return "";
            }};
}

// ---- the registry entries ---------------------------------------------------------------

Outputs step_outputs(const DoublyStochasticSoftAttention::Output& o, bool gated) {
    return {{"output", o.output}, {"weights", o.weights}, {"gate", o.gate, gated}};
}

Outputs run_step(Module* m, In x, Masks masks, bool gated) {
    auto& att = as<DoublyStochasticSoftAttention>(m);
    return step_outputs(att.step(x[1], att.precompute(x[0], mask_or_none(masks, 0))), gated);
}

// T decoder steps that share one memory, then the penalty over the caption.
Outputs run_caption(Module* m, In x, Masks masks, real lambda) {
    auto& att = as<DoublyStochasticSoftAttention>(m);
    const auto memory = att.precompute(x[0], mask_or_none(masks, 0));
    std::vector<Var> z, alpha, beta;
    for (int64_t t = 0; t < x[1].size(1); ++t) {
        const auto o = att.step(squeeze(narrow(x[1], 1, t, 1), 1), memory);
        z.push_back(o.output), alpha.push_back(o.weights), beta.push_back(o.gate);
    }
    const Var weights = stack(alpha, 1);
    return {{"output", stack(z, 1)}, {"weights", weights}, {"gate", stack(beta, 1)},
            {"penalty", as_vector(doubly_stochastic_penalty(weights, lambda))}};
}

std::vector<Property> step_properties() {
    return {rows_sum_to_one("weights"), bounded("gate", 0, 1), permutation_equivariant_keys({0}, {0}, {"weights"}),
            permutation_invariant({0}, {0}, {"output", "gate"})};
}

const KeySet annotations_masked{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}};

const RegisterEntry doubly_stochastic_entry(53, "doubly_stochastic_soft_attention", {
    {.variant = "one gated step, L 5 locations of D 3, d_h 4, d_w 6, lengths 5 and 3",
     .inputs = {Shape{2, 5, 3}, Shape{2, 4}},
     .masks = {keep_first({5, 3}, 5)},
     .make = [](Generator& g) { return std::make_unique<DoublyStochasticSoftAttention>(3, 4, 6, g); },
     .run = [](Module* m, In x, Masks k) { return run_step(m, x, k, true); },
     .reference = [](const Ref& r) { return doubly_stochastic_step_reference(r, true); },
     .masking = {annotations_masked},
     .properties = step_properties()},
    {.variant = "square: D = d_h = d_w = 4 (a transposed weight is shape-valid), lengths 4 and 2",
     .inputs = {Shape{2, 4, 4}, Shape{2, 4}},
     .masks = {keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<DoublyStochasticSoftAttention>(4, 4, 4, g); },
     .run = [](Module* m, In x, Masks k) { return run_step(m, x, k, true); },
     .reference = [](const Ref& r) { return doubly_stochastic_step_reference(r, true); },
     .masking = {annotations_masked},
     .properties = step_properties()},
    {.variant = "ungated step (β ≡ 1: entries 15 + 22), L 4 of D 2, d_h 3, d_w 5",
     .inputs = {Shape{2, 4, 2}, Shape{2, 3}},
     .make = [](Generator& g) { return std::make_unique<DoublyStochasticSoftAttention>(2, 3, 5, g, false); },
     .run = [](Module* m, In x, Masks k) { return run_step(m, x, k, false); },
     .reference = [](const Ref& r) { return doubly_stochastic_step_reference(r, false); },
     .properties = {rows_sum_to_one("weights"), convex_combination("output", 0), bounded("gate", 1, 1)}},
    {.variant = "3 decoder steps from one precomputed memory, then the penalty with λ 0.5; lengths 5 and 4",
     .inputs = {Shape{2, 5, 3}, Shape{2, 3, 4}},
     .masks = {keep_first({5, 4}, 5)},
     .make = [](Generator& g) { return std::make_unique<DoublyStochasticSoftAttention>(3, 4, 6, g); },
     .run = [](Module* m, In x, Masks k) { return run_caption(m, x, k, 0.5); },
     .reference = [](const Ref& r) { return doubly_stochastic_caption_reference(r, 0.5); },
     .masking = {annotations_masked},
     .properties = {rows_sum_to_one("weights"), bounded("gate", 0, 1)}},
    {.variant = "the penalty alone, T 3 × L 4, λ 0.7, example 1's last step padded",
     .inputs = {Shape{2, 3, 4}},
     .masks = {keep_first({3, 2}, 3)},
     .run = [](Module*, In x, Masks k) {
         return Outputs{{"penalty", as_vector(doubly_stochastic_penalty(softmax(x[0], -1), 0.7, k[0]))}};
     },
     .reference = [](const Ref& r) {
         return std::vector<Expected>{{"penalty", scalar(penalty_reference(softmax_rows(r.x[0]), 0.7, r.masks[0]))}};
     },
     .masking = {{.mask = 0,
                  .inputs = {0},
                  .weights = {},
                  .finite_only = "the case's own softmax (before the penalty) turns a NaN step into NaN weights"
                                 " and sends that step NaN; the penalty itself hides it"}}},
    {.variant = "the penalty alone, T 5 > L 3, λ 1, batch 3",
     .inputs = {Shape{3, 5, 3}},
     .run = [](Module*, In x, Masks) { return Outputs{{"penalty", as_vector(doubly_stochastic_penalty(softmax(x[0], -1)))}}; },
     .reference = [](const Ref& r) {
         return std::vector<Expected>{{"penalty", scalar(penalty_reference(softmax_rows(r.x[0]), 1, Array()))}};
     }},
});

Outputs run_feed_forward(Module* m, In x, Masks masks) {
    const AttentionOutput o = as<FeedForwardAttention>(m).forward(x[0], mask_or_none(masks, 0));
    return {{"output", o.output}, {"weights", o.weights}};
}

std::vector<Property> feed_forward_properties(std::vector<int> masks) {
    return {rows_sum_to_one("weights"), permutation_invariant({0}, masks, {"output"}),
            permutation_equivariant_keys({0}, masks, {"weights"}),
            convex_combination("output", 0, masks.empty() ? -1 : 0), weight_ratio_at_most_e2()};
}

const RegisterEntry feed_forward_entry(55, "feed_forward_attention", {
    {.variant = "T 5 of d 3, lengths 5 and 3",
     .inputs = {Shape{2, 5, 3}},
     .masks = {keep_first({5, 3}, 5)},
     .make = [](Generator& g) { return std::make_unique<FeedForwardAttention>(3, g); },
     .run = run_feed_forward,
     .reference = feed_forward_reference,
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}}},
     .properties = feed_forward_properties({0})},
    {.variant = "T 3 of d 6 (d > T), no mask, batch 3",
     .inputs = {Shape{3, 3, 6}},
     .make = [](Generator& g) { return std::make_unique<FeedForwardAttention>(6, g); },
     .run = run_feed_forward,
     .reference = feed_forward_reference,
     .properties = feed_forward_properties({})},
});

Outputs run_structured(Module* m, In x, Masks masks) {
    const auto o = as<StructuredSelfAttention>(m).forward(x[0], mask_or_none(masks, 0));
    return {{"output", o.output}, {"weights", o.weights}, {"penalty", o.penalty}};
}

std::vector<Property> structured_properties(std::vector<int> masks, double rows) {
    return {rows_sum_to_one("weights"), permutation_equivariant_keys({0}, masks, {"weights"}),
            permutation_invariant({0}, masks, {"output", "penalty"}),
            convex_combination("output", 0, masks.empty() ? -1 : 0), bounded("penalty", 0, rows * rows)};
}

const KeySet states_masked{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}};

// The penalty alone on softmax(x): x B×r×n → P B.
std::vector<Expected> penalty_of_softmax_reference(const Ref& r) {
    const Array A = softmax_rows(r.x[0]);
    Array P({A.size(0)});
    for (int64_t b = 0; b < A.size(0); ++b) P(b) = structured_penalty_reference(A, b);
    return {{"penalty", P}};
}

const RegisterEntry structured_entry(56, "structured_self_attention", {
    {.variant = "r 3 rows, d_a 4, n 5 of d 3, lengths 5 and 2",
     .inputs = {Shape{2, 5, 3}},
     .masks = {keep_first({5, 2}, 5)},
     .make = [](Generator& g) { return std::make_unique<StructuredSelfAttention>(3, 4, 3, g); },
     .run = run_structured,
     .reference = structured_reference,
     .masking = {states_masked},
     .properties = structured_properties({0}, 3)},
    {.variant = "square: d = d_a = r = n = 4 (transposed W_s1, W_s2, AᵀA all shape-valid), lengths 4 and 3",
     .inputs = {Shape{2, 4, 4}},
     .masks = {keep_first({4, 3}, 4)},
     .make = [](Generator& g) { return std::make_unique<StructuredSelfAttention>(4, 4, 4, g); },
     .run = run_structured,
     .reference = structured_reference,
     .masking = {states_masked},
     .properties = structured_properties({0}, 4)},
    {.variant = "r 1 (entry 35 with b = 0), d_a 3, n 6 of d 2, no mask",
     .inputs = {Shape{2, 6, 2}},
     .make = [](Generator& g) { return std::make_unique<StructuredSelfAttention>(2, 3, 1, g); },
     .run = run_structured,
     .reference = structured_reference,
     .properties = structured_properties({}, 1)},
    {.variant = "the penalty alone on softmax rows, r 3 × n 5",
     .inputs = {Shape{2, 3, 5}},
     .run = [](Module*, In x, Masks) { return Outputs{{"penalty", structured_penalty(softmax(x[0], -1))}}; },
     .reference = penalty_of_softmax_reference,
     .properties = {bounded("penalty", 0, 9)}},
    {.variant = "the penalty alone on softmax rows, r = n = 4 (AᵀA would be shape-valid)",
     .inputs = {Shape{2, 4, 4}},
     .run = [](Module*, In x, Masks) { return Outputs{{"penalty", structured_penalty(softmax(x[0], -1))}}; },
     .reference = penalty_of_softmax_reference},
});

}  // namespace

// ---- 53. doubly_stochastic_soft_attention ----------------------------------------------------

TEST_CASE(
    "doubly_stochastic_soft_attention: the penalty is 0 for a permutation matrix, λ L (1 − T/L)² for uniform weights") {
    const Tensor perm = Tensor::from({0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1}, {1, 4, 4});
    CHECK(doubly_stochastic_penalty(Var(perm)).item() == 0);
    // T = 2, L = 4, α = 1/4 everywhere: Σ_t α_ti = 0.5, so 2 · 4 · 0.25 = 2
    CHECK(std::abs(doubly_stochastic_penalty(Var(Tensor::full({1, 2, 4}, 0.25)), 2).item() - 2.0) < 1e-12);
    // a masked step counts for nothing: one step of α = 1/4 left → 4 · (0.75)² = 2.25
    CHECK(
        std::abs(doubly_stochastic_penalty(Var(Tensor::full({1, 2, 4}, 0.25)), 1, Tensor::from({1, 0}, {1, 2})).item() -
                 2.25) < 1e-12);
}

TEST_CASE("doubly_stochastic_soft_attention: β ∈ (0, 1) scales the context; β ≡ 1 is additive score + soft alignment") {
    Generator gen(53);
    DoublyStochasticSoftAttention gated(3, 4, 5, gen);
    DoublyStochasticSoftAttention plain(3, 4, 5, gen, /*gated=*/false);
    for (auto [from, to] : {std::pair{&gated.score.W_1, &plain.score.W_1}, std::pair{&gated.score.W_2, &plain.score.W_2},
                            std::pair{&gated.score.b, &plain.score.b}, std::pair{&gated.score.w, &plain.score.w}})
        to->value().copy_(from->value());
    const Var A(normal({2, 6, 3}, gen)), h(normal({2, 4}, gen));
    const auto g = gated.step(h, gated.precompute(A));
    const auto p = plain.step(h, plain.precompute(A));
    for (int64_t b = 0; b < 2; ++b) {
        const real beta = g.gate.value()[b];
        CHECK(beta > 0);
        CHECK(beta < 1);
        for (int64_t j = 0; j < 3; ++j)
            CHECK(std::abs(g.output.value().at({b, j}) - beta * p.output.value().at({b, j})) < 1e-12);
    }
    // β ≡ 1: a standalone additive score with the same parameters, then a softmax
    AdditiveScore additive(4, 3, 5, gen);
    additive.W_1.value().copy_(plain.score.W_1.value());
    additive.W_2.value().copy_(plain.score.W_2.value());
    additive.b.value().copy_(plain.score.b.value());
    additive.w.value().copy_(plain.score.w.value());
    const Tensor alpha = softmax(additive.score(unsqueeze(h, 1), A).value(), -1);
    CHECK(allclose(p.weights.value(), squeeze(alpha, 1), 0, 1e-12));
    CHECK(allclose(p.output.value(), squeeze(matmul(alpha, A.value()), 1), 0, 1e-12));
}

TEST_CASE("doubly_stochastic_soft_attention: W4's sizes give the attention's share of its parameter count") {
    Generator gen(54);
    // score: W_2 64→128 with the bias b, W_1 256→128 and w without; gate 256→1
    DoublyStochasticSoftAttention att(64, 256, 128, gen);
    CHECK(att.num_parameters() == (128 * 64 + 128) + 128 * 256 + 128 + (256 + 1));
    CHECK_THROWS_AS(att.step(Var(normal({2, 255}, gen)), att.precompute(Var(normal({2, 9, 64}, gen)))),
                    std::invalid_argument);
}

// ---- 55. feed_forward_attention -------------------------------------------------------------

TEST_CASE("feed_forward_attention: with the tanh saturated the weight ratio reaches, but never exceeds, e²") {
    Generator gen(55);
    FeedForwardAttention att(3, gen);
    att.w.value().copy_(Tensor::from({40, -30, 50}));  // large, to push tanh to its bounds
    const Tensor H = normal({2, 6, 3}, gen);
    const AttentionOutput a = att.forward(Var(H));
    for (int64_t bi = 0; bi < 2; ++bi) {
        const Tensor w = slice(a.weights.value(), 0, bi, bi + 1);
        const double ratio = max(w).item() / min(w).item();
        CHECK(ratio <= 7.389056 + 1e-6);
        CHECK(ratio >= 7.389056 - 1e-3);
    }
}

// ---- 56. structured_self_attention ----------------------------------------------------------

TEST_CASE("structured_self_attention: P = 0 exactly for one-hot rows on distinct positions") {
    const Tensor distinct = Tensor::from({0, 1, 0, 0, 0, 0, 0, 1}, {1, 2, 4});
    const Tensor same = Tensor::from({0, 1, 0, 0, 0, 1, 0, 0}, {1, 2, 4});
    const Tensor spread = Tensor::from({0.5, 0.5, 0, 0, 0, 0, 0.5, 0.5}, {1, 2, 4});
    CHECK(structured_penalty(Var(distinct)).item() == 0);
    CHECK(structured_penalty(Var(same)).item() == 2);      // the off-diagonal 1s
    CHECK(structured_penalty(Var(spread)).item() == 0.5);  // the diagonal 0.5s: 2 · 0.25
}

TEST_CASE("structured_self_attention: r = 1 is constant-query self-attention with b = 0") {
    Generator gen(57);
    StructuredSelfAttention structured(3, 4, 1, gen);
    ConstantQuerySelfAttention constant(3, 4, gen);
    constant.W.value().copy_(structured.W_s1.value());
    constant.b.value().fill_(0);
    constant.w.value().copy_(structured.W_s2.value().reshape(Shape{4}));
    const Var H(normal({2, 5, 3}, gen));
    const Tensor mask = keep_first({5, 2}, 5);
    const auto a = structured.forward(H, mask);
    const auto b = constant.forward(H, mask);
    CHECK(allclose(a.output.value(), b.output.value(), 0, 1e-12));
    CHECK(allclose(a.weights.value(), b.weights.value(), 0, 1e-12));
}

TEST_CASE("sequence variants 53, 55, 56: their survey tags") {
    Generator gen(58);
    const Taxonomy soft = DoublyStochasticSoftAttention(3, 4, 5, gen).taxonomy();
    CHECK(soft.scoring == "additive_score");
    CHECK(soft.alignment == "soft");
    CHECK(soft.query == "basic");
    const Taxonomy ff = FeedForwardAttention(3, gen).taxonomy();
    CHECK(ff.scoring == "activated_general_score");
    CHECK(ff.query == "self");
    CHECK(ff.alignment == "soft");
    const Taxonomy structured = StructuredSelfAttention(3, 4, 2, gen).taxonomy();
    CHECK(structured.scoring == "additive_score");
    CHECK(structured.query == "self");
    CHECK(structured.alignment == "soft");
}
