// The stochastic alignments, catalog entries 23, 26 and 27
// (attention/alignments.hpp): gradient-check cases in the attention registry
// (with the draws held fixed by reseeding), the statistical tests of the
// catalog with fixed seeds and the stated sample sizes, and their exact
// properties (one row of V, zero outside the selection, straight-through).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Tensor padded_mask() { return key_mask(length_mask({3, 0}, 5)); }

// A stochastic alignment with a generator of its own, reseeded before every
// run, so that the finite differences see the same draws as backward().
template <class A>
struct Reseeded : Module {
    Generator gen{7};
    A align;
    template <class... Args>
    explicit Reseeded(Args&&... args) : align(std::forward<Args>(args)..., gen) {
        register_module("align", align);
    }
    Var run(const AlignmentInput& in) {
        gen.manual_seed(7);
        return align.align(in);
    }
};

// HardAlignment and GumbelSoftmaxAlignment take the generator first.
struct HardCase : Module {
    Generator gen{7};
    HardAlignment align;
    explicit HardCase(HardAlignment::Options o) : align(gen, o) { register_module("align", align); }
};
struct GumbelCase : Module {
    Generator gen{7};
    GumbelSoftmaxAlignment align;
    explicit GumbelCase(real tau) : align(gen, tau) { register_module("align", align); }
};


// The hard context c = onehot(m) V and log a_m, both checked.
Var hard_run(Module* m, const std::vector<Var>& x, const Tensor& mask) {
    auto& h = *static_cast<HardCase*>(m);
    h.gen.manual_seed(7);
    const Var weights = h.align.align({x[0], mask, Var(), Tensor()});
    return concat({flat(attend(weights, x[1])), flat(h.align.last().log_prob)}, 0);
}

const RegisterMechanisms stochastic_cases({
    {"hard_alignment", "sampled context and log a_m (REINFORCE), padding", {Shape{2, 3, 5}, Shape{2, 5, 4}},
     [](Generator&) { return std::make_unique<HardCase>(HardAlignment::Options{}); },
     [](Module* m, const std::vector<Var>& x) { return hard_run(m, x, padded_mask()); }},
    {"hard_alignment", "entropy H[a] (Xu's λ_e term), padding", {Shape{2, 3, 5}}, nullptr,
     [](Module*, const std::vector<Var>& x) {
         Generator gen(7);
         return HardAlignment(gen).sample({x[0], padded_mask(), Var(), Tensor()}).entropy;
     }},
    {"hard_alignment", "expected context with probability 0.5", {Shape{2, 4, 5}, Shape{2, 5, 3}},
     [](Generator&) { return std::make_unique<HardCase>(HardAlignment::Options{false, 0.5}); },
     [](Module* m, const std::vector<Var>& x) { return hard_run(m, x, Tensor()); }},
    {"gumbel_softmax_alignment", "τ = 0.5, padding", {Shape{2, 3, 5}}, [](Generator&) { return std::make_unique<GumbelCase>(0.5); },
     [](Module* m, const std::vector<Var>& x) {
         auto& g = *static_cast<GumbelCase*>(m);
         g.gen.manual_seed(7);
         return g.align.align({x[0], padded_mask(), Var(), Tensor()});
     }},
    {"reinforced_alignment", "self-attention over 5 tokens of 3, padding", {Shape{2, 5, 3}, Shape{2, 5, 5}},
     [](Generator&) { return std::make_unique<Reseeded<ReinforcedAlignment>>(3, 4); },
     [](Module* m, const std::vector<Var>& x) {
         auto& r = *static_cast<Reseeded<ReinforcedAlignment>*>(m);
         const Var weights = r.run({x[1], padded_mask(), x[0], Tensor()});
         return concat({flat(weights), r.align.last_attending().log_prob, r.align.last_attended().log_prob}, 0);
     }},
});

// χ² statistic of observed counts against probabilities p over `draws`.
double chi_squared(const std::vector<int64_t>& counts, const Tensor& p, int64_t draws) {
    double chi2 = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
        const double expected = p[static_cast<int64_t>(k)] * static_cast<double>(draws);
        chi2 += (static_cast<double>(counts[k]) - expected) * (static_cast<double>(counts[k]) - expected) / expected;
    }
    return chi2;
}
// χ² with 4 degrees of freedom (5 categories) exceeds this with probability 0.001.
constexpr double kChi2Df4P001 = 18.467;

const std::vector<real> kScores = {0.1, 1.0, -0.5, 0.3, 0.7};

// The same 5 scores for `rows` independent rows: rows×1×5.
Var repeated_scores(int64_t rows) { return Var(expand(Tensor::from(kScores, Shape{1, 1, 5}), Shape{rows, 1, 5})); }

Tensor reference_probs() { return softmax(Tensor::from(kScores, Shape{5}), 0); }

}  // namespace

// ---- 23. hard_alignment --------------------------------------------------------------------------------

TEST_CASE("hard_alignment: c is always exactly one row of V") {
    Generator gen(1);
    HardAlignment hard(gen);
    const Var e(Tensor::normal(Shape{50, 2, 6}, 0, 1, gen)), V(Tensor::normal(Shape{50, 6, 3}, 0, 1, gen));
    const Var c = attend(hard.align({e, Tensor(), Var(), Tensor()}), V);
    for (int64_t b = 0; b < 50; ++b)
        for (int64_t i = 0; i < 2; ++i) {
            const auto m = static_cast<int64_t>(hard.last().indices.at({b, i}));
            for (int64_t j = 0; j < 3; ++j) CHECK(c.value().at({b, i, j}) == V.value().at({b, m, j}));
        }
}

TEST_CASE("hard_alignment: over 10⁵ draws (seed 23) the index frequencies match a (χ², p > 0.001)") {
    const int64_t draws = 100000;
    Generator gen(23);
    HardAlignment hard(gen);
    const Var V(Tensor::from({1, 0, 0, 1, 2, 2, -1, 3, 0.5, -2}, Shape{5, 2}));
    const Var c = attend(hard.align({repeated_scores(draws), Tensor(), Var(), Tensor()}), V);
    std::vector<int64_t> counts(5, 0);
    for (int64_t r = 0; r < draws; ++r) ++counts[static_cast<size_t>(hard.last().indices[r])];
    const Tensor a = reference_probs();
    CHECK(chi_squared(counts, a, draws) < kChi2Df4P001);

    // The mean of the sampled c is close to the soft context aᵀV (5 standard errors).
    const Tensor soft = matmul(reshape(a, {1, 5}), V.value());
    const Tensor mean_c = mean(reshape(c.value(), {draws, 2}), 0);
    for (int64_t j = 0; j < 2; ++j) CHECK(std::abs(mean_c[j] - soft[j]) < 0.02);
}

TEST_CASE("hard_alignment: log_prob is log a_m and its gradient is onehot(m) − a (REINFORCE)") {
    Generator gen(2);
    HardAlignment hard(gen);
    Var e(Tensor::from(kScores, Shape{1, 1, 5}), true);
    hard.align({e, Tensor(), Var(), Tensor()});
    const HardAlignment::Sample& s = hard.last();
    const auto m = static_cast<int64_t>(s.indices[0]);
    const Tensor a = reference_probs();
    CHECK(std::abs(s.log_prob.item() - std::log(a[m])) <= 1e-12);
    Var log_prob = s.log_prob;
    log_prob.backward();
    for (int64_t l = 0; l < 5; ++l) CHECK(std::abs(e.grad()[l] - ((l == m ? 1 : 0) - a[l])) <= 1e-12);
    // Entropy of a: −Σ a log a.
    double H = 0;
    for (int64_t l = 0; l < 5; ++l) H -= a[l] * std::log(a[l]);
    CHECK(std::abs(s.entropy.item() - H) <= 1e-12);
    // The one-hot weights carry no gradient: scores learn only through log_prob.
    CHECK(!s.weights.requires_grad());
}

TEST_CASE("hard_alignment: evaluation takes the arg-max, or samples when asked") {
    Generator gen(3);
    HardAlignment hard(gen);
    hard.eval();
    hard.align({repeated_scores(100), Tensor(), Var(), Tensor()});
    for (int64_t r = 0; r < 100; ++r) CHECK(hard.last().indices[r] == 1);  // argmax of kScores

    HardAlignment sampling(gen, {true, 0});
    sampling.eval();
    sampling.align({repeated_scores(100), Tensor(), Var(), Tensor()});
    int64_t not_argmax = 0;
    for (int64_t r = 0; r < 100; ++r) not_argmax += sampling.last().indices[r] != 1;
    CHECK(not_argmax > 30);  // a_1 = 0.32: about 68 of 100 draws are elsewhere
}

TEST_CASE("hard_alignment: with probability 0.5 a row uses the expected context (10⁴ rows, seed 4)") {
    const int64_t rows = 10000;
    Generator gen(4);
    HardAlignment hard(gen, {false, 0.5});
    hard.align({repeated_scores(rows), Tensor(), Var(), Tensor()});
    const HardAlignment::Sample& s = hard.last();
    const Tensor a = reference_probs();
    int64_t soft_rows = 0, wrong = 0;
    for (int64_t r = 0; r < rows; ++r) {
        if (s.soft[r] == 1) {  // the expected context: weights a, no REINFORCE term
            ++soft_rows;
            for (int64_t l = 0; l < 5; ++l) wrong += std::abs(s.weights.value()[r * 5 + l] - a[l]) > 1e-12;
            wrong += s.log_prob.value()[r] != 0;
        } else {  // a sample: one-hot weights
            wrong += s.weights.value()[r * 5 + static_cast<int64_t>(s.indices[r])] != 1;
        }
    }
    CHECK(wrong == 0);
    CHECK(std::abs(static_cast<double>(soft_rows) / rows - 0.5) < 0.03);
}

TEST_CASE("hard_alignment: set_soft_probability changes the share of expected-context rows from the next call") {
    Generator gen(4);
    HardAlignment hard(gen, {false, 0.5});
    hard.set_soft_probability(1);
    CHECK(hard.soft_probability() == 1);
    hard.align({repeated_scores(200), Tensor(), Var(), Tensor()});
    double soft_rows = 0;
    for (int64_t r = 0; r < 200; ++r) soft_rows += hard.last().soft[r];
    CHECK(soft_rows == 200);  // every row: the expected context, no REINFORCE term
    hard.set_soft_probability(0);
    hard.align({repeated_scores(200), Tensor(), Var(), Tensor()});
    soft_rows = 0;
    for (int64_t r = 0; r < 200; ++r) soft_rows += hard.last().soft[r];
    CHECK(soft_rows == 0);  // every row samples
    CHECK_THROWS_WITH_AS(hard.set_soft_probability(1.5),
                         "hard_alignment: soft_probability must be in [0, 1], got 1.500000", std::invalid_argument);
}

TEST_CASE("hard_alignment: a fully masked row gives index −1, zero weights, log_prob 0 and zero gradient") {
    Generator gen(5);
    HardAlignment hard(gen);
    Var e(Tensor::normal(Shape{2, 3, 5}, 0, 1, gen), true);
    const Var V(Tensor::normal(Shape{2, 5, 4}, 0, 1, gen), true);
    const Var c = attend(hard.align({e, padded_mask(), Var(), Tensor()}), V);
    const HardAlignment::Sample& s = hard.last();
    (sum(c) + sum(s.log_prob) + sum(s.entropy)).backward();
    for (int64_t i = 0; i < 3; ++i) {
        CHECK(s.indices.at({0, i}) < 3);
        CHECK(s.indices.at({1, i}) == -1);
        CHECK(s.log_prob.value().at({1, i}) == 0);
    }
    for (int64_t i = 15; i < 30; ++i) CHECK(s.weights.value()[i] == 0);
    for (int64_t i = 0; i < 3; ++i) CHECK(s.entropy.value().at({1, i}) == 0);
    for (int64_t i = 0; i < 30; ++i) CHECK(std::isfinite(e.grad()[i]));
    for (int64_t i = 15; i < 30; ++i) CHECK(e.grad()[i] == 0);
    CHECK(hard.id() == "hard_alignment");
}

// ---- 26. reinforced_alignment -----------------------------------------------------------------------------

TEST_CASE("reinforced_alignment: keeping every token is soft_alignment; unselected tokens get exactly 0") {
    Generator gen(6);
    const Var e(Tensor::normal(Shape{2, 4, 4}, 0, 1, gen));
    const Tensor all = Tensor::ones(Shape{2, 4});
    const Tensor soft = SoftAlignment().align({e, Tensor(), Var(), Tensor()}).value();
    for (int64_t i = 0; i < soft.numel(); ++i)
        CHECK(std::abs(ReinforcedAlignment::restricted_softmax(e, Tensor(), all, all).value()[i] - soft[i]) <= 1e-12);

    const Tensor z_att = Tensor::from({1, 0, 1, 1, 0, 0, 0, 0}, Shape{2, 4});  // nobody attends in sequence 2
    const Tensor z_ed = Tensor::from({1, 1, 0, 1, 1, 1, 1, 1}, Shape{2, 4});
    const Tensor a = ReinforcedAlignment::restricted_softmax(e, Tensor(), z_att, z_ed).value();
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 4; ++i) {
            double total = 0;
            for (int64_t l = 0; l < 4; ++l) {
                total += a.at({b, i, l});
                if (z_att.at({b, i}) == 0 || z_ed.at({b, l}) == 0) CHECK(a.at({b, i, l}) == 0);
            }
            CHECK(std::abs(total - z_att.at({b, i})) <= 1e-12);  // no position selected: zero output
        }
}

TEST_CASE("reinforced_alignment: z ~ Bernoulli(π) with log p(z) = Σ z log π + (1 − z) log(1 − π)") {
    Generator gen(7);
    ReinforcedAlignment resa(3, 4, gen);
    const Var tokens(Tensor::normal(Shape{64, 6, 3}, 0, 1, gen));
    const Var e(Tensor::normal(Shape{64, 6, 6}, 0, 1, gen));
    const Var a = resa.align({e, Tensor(), tokens, Tensor()});
    const auto& att = resa.last_attending();
    const auto& ed = resa.last_attended();
    double kept = 0, expected = 0;
    for (int64_t b = 0; b < 64; ++b) {
        double log_p = 0;
        for (int64_t l = 0; l < 6; ++l) {
            const double pi = ed.probs.value().at({b, l}), z = ed.z.at({b, l});
            log_p += z * std::log(pi) + (1 - z) * std::log(1 - pi);
            kept += z, expected += pi;
            for (int64_t i = 0; i < 6; ++i)
                if (att.z.at({b, i}) * z == 0) CHECK(a.value().at({b, i, l}) == 0);
        }
        CHECK(std::abs(ed.log_prob.value()[b] - log_p) <= 1e-10);
    }
    CHECK(std::abs(kept - expected) < 4 * std::sqrt(64.0 * 6 * 0.25));  // 384 draws, 4 standard deviations

    resa.eval();  // deterministic: z = [π > 0.5]
    resa.align({e, Tensor(), tokens, Tensor()});
    for (int64_t i = 0; i < resa.last_attended().z.numel(); ++i)
        CHECK(resa.last_attended().z[i] == (resa.last_attended().probs.value()[i] > 0.5 ? 1 : 0));
    CHECK_THROWS_AS(resa.align({Var(Tensor::zeros(Shape{64, 2, 6})), Tensor(), tokens, Tensor()}),
                    std::invalid_argument);
}

// ---- 27. gumbel_softmax_alignment --------------------------------------------------------------------------

TEST_CASE("gumbel_softmax_alignment: arg-max frequencies match a over 10⁵ draws (seed 27, χ², p > 0.001)") {
    const int64_t draws = 100000;
    Generator gen(27);
    GumbelSoftmaxAlignment gumbel(gen, 1);
    const Tensor y = gumbel.align({repeated_scores(draws), Tensor(), Var(), Tensor()}).value();
    const Tensor winners = argmax(y, -1);
    std::vector<int64_t> counts(5, 0);
    for (int64_t r = 0; r < draws; ++r) ++counts[static_cast<size_t>(winners[r])];
    CHECK(chi_squared(counts, reference_probs(), draws) < kChi2Df4P001);
    for (int64_t r = 0; r < 100; ++r) {
        double total = 0;
        for (int64_t l = 0; l < 5; ++l) total += y[r * 5 + l];
        CHECK(std::abs(total - 1) <= 1e-12);  // rows sum to 1
    }
}

TEST_CASE("gumbel_softmax_alignment: at τ = 0.01 the rows are nearly one-hot (10⁴ rows, seed 28)") {
    Generator gen(28);
    GumbelSoftmaxAlignment gumbel(gen, 0.01);
    const Tensor top = max(gumbel.align({repeated_scores(10000), Tensor(), Var(), Tensor()}).value(), -1);
    int64_t nearly_one_hot = 0;
    for (int64_t r = 0; r < 10000; ++r) nearly_one_hot += top[r] > 0.99;
    CHECK(nearly_one_hot > 9000);
}

TEST_CASE("gumbel_softmax_alignment: straight-through is one-hot forward, the soft gradient backward") {
    Generator noise_soft(9), noise_st(9), data(10);  // the same seed: the same Gumbel noise
    GumbelSoftmaxAlignment soft(noise_soft, 0.5), st(noise_st, 0.5, /*straight_through=*/true);
    Var e1(Tensor::normal(Shape{2, 3, 5}, 0, 1, data), true);
    Var e2(e1.value().clone(), true);
    Var y = soft.align({e1, padded_mask(), Var(), Tensor()});
    Var hard = st.align({e2, padded_mask(), Var(), Tensor()});
    const Tensor winners = argmax(y.value(), -1);
    for (int64_t r = 0; r < 3; ++r)
        for (int64_t l = 0; l < 5; ++l) CHECK(hard.value()[r * 5 + l] == (l == winners[r] ? 1 : 0));
    for (int64_t i = 15; i < 30; ++i) CHECK(hard.value()[i] == 0);  // fully masked: zeros
    const Tensor upstream = Tensor::normal(y.shape(), 0, 1, data);
    y.backward(upstream);
    hard.backward(upstream);
    for (int64_t i = 0; i < 30; ++i) CHECK(std::abs(e1.grad()[i] - e2.grad()[i]) <= 1e-12);
    for (int64_t i = 15; i < 30; ++i) CHECK(e1.grad()[i] == 0);
}

TEST_CASE("gumbel_softmax_alignment: without noise (evaluation) it is soft_alignment at temperature τ") {
    Generator gen(10);
    GumbelSoftmaxAlignment gumbel(gen, 2);
    gumbel.eval();
    const Var e(Tensor::normal(Shape{2, 3, 5}, 0, 1, gen));
    const Tensor y = gumbel.align({e, padded_mask(), Var(), Tensor()}).value();
    const Tensor a = SoftAlignment(2).align({e, padded_mask(), Var(), Tensor()}).value();
    for (int64_t i = 0; i < y.numel(); ++i) CHECK(std::abs(y[i] - a[i]) <= 1e-12);
}
