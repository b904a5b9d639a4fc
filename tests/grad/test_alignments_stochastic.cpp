// The stochastic alignments, catalog entries 23, 26 and 27
// (attention/alignments.hpp): the statistical tests of the catalog with fixed
// seeds and the stated sample sizes, and the training-time estimators checked
// against the exact gradient on cases small enough to enumerate. Their registry
// entries, with references that replay the draws, are in
// test_alignments_reference.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "tensor/ops.hpp"

using namespace attn;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Tensor padded_mask() { return key_mask(length_mask({3, 0}, 5)); }

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

// softmax(e) in plain loops, for the exact gradients below.
std::vector<double> plain_softmax(const std::vector<double>& e) {
    double total = 0;
    std::vector<double> a(e.size());
    for (size_t l = 0; l < e.size(); ++l) total += a[l] = std::exp(e[l]);
    for (double& v : a) v /= total;
    return a;
}

// Runs `draw(seed)` for seeds 0, 1, ... until every outcome in [0, count) has
// been seen; keeps the first gradient returned for each outcome.
template <class Draw>
std::vector<std::vector<double>> enumerate_outcomes(int count, Draw draw) {
    std::vector<std::vector<double>> seen(static_cast<size_t>(count));
    int missing = count;
    for (uint64_t seed = 0; seed < 10000 && missing > 0; ++seed) {
        auto [outcome, gradient] = draw(seed);
        if (seen[static_cast<size_t>(outcome)].empty()) seen[static_cast<size_t>(outcome)] = gradient, --missing;
    }
    REQUIRE(missing == 0);
    return seen;
}

}  // namespace

// ---- 23. hard_alignment --------------------------------------------------------------------------------

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

TEST_CASE("hard_alignment: enumerating m, REINFORCE's expected gradient is exactly ∇ Σ_m a_m f(m), with or without expected-context rows") {
    // One row of n = 3: a = softmax(e), the reward of index m is f(m) = wᵀv_m and
    // J = Σ_m a_m f(m), so ∂J/∂e_k = a_k (f(k) − J). Each draw gives the
    // surrogate L = wᵀc + (f(m) − b) log a_m with a baseline b (log_prob = 0
    // on an expected-context row, whose c = aᵀV backpropagates instead). Its
    // gradient, weighted by the outcome's probability — (1 − p) a_m for index m,
    // p for the expected context — and summed, must be ∂J/∂e exactly.
    const std::vector<double> e = {0.4, -0.3, 1.1}, w = {0.7, -1.2};
    const std::vector<real> V_values = {1.0, 0.5, -0.4, 2.0, 0.3, -1.1};  // V 3×2
    const double baseline = 0.35;
    const std::vector<double> a = plain_softmax(e);
    std::vector<double> f(3), exact(3);
    double J = 0;
    for (int m = 0; m < 3; ++m) J += a[m] * (f[m] = w[0] * V_values[2 * m] + w[1] * V_values[2 * m + 1]);
    for (int k = 0; k < 3; ++k) exact[k] = a[k] * (f[k] - J);

    for (double p : {0.0, 0.5}) {
        CAPTURE(p);
        // Outcomes 0..2: the sampled index; 3: the expected context.
        const auto gradients = enumerate_outcomes(p > 0 ? 4 : 3, [&](uint64_t seed) {
            Generator gen(seed);
            HardAlignment hard(gen, {false, p});
            Var scores(Tensor::from({real(e[0]), real(e[1]), real(e[2])}, Shape{1, 1, 3}), true);
            const Var V(Tensor::from(V_values, Shape{1, 3, 2}));
            const Var c = attend(hard.align({scores, Tensor(), Var(), Tensor()}), V);
            const Var reward = sum(c * Var(Tensor::from({real(w[0]), real(w[1])}, Shape{1, 1, 2})));
            (reward + Var(Tensor::scalar(reward.item() - baseline)) * sum(hard.last().log_prob)).backward();
            const int outcome = hard.last().soft[0] == 1 ? 3 : static_cast<int>(hard.last().indices[0]);
            std::vector<double> g(3);
            for (int k = 0; k < 3; ++k) g[k] = scores.grad()[k];
            return std::pair{outcome, g};
        });
        for (int k = 0; k < 3; ++k) {
            double expected = 0;
            for (int m = 0; m < 3; ++m) expected += (1 - p) * a[m] * gradients[m][k];
            if (p > 0) expected += p * gradients[3][k];
            CHECK(std::abs(expected - exact[k]) <= 1e-12);
        }
    }

    // The entropy bonus: ∂H/∂e_k = −a_k (log a_k + H).
    Generator gen(1);
    HardAlignment hard(gen);
    Var scores(Tensor::from({real(e[0]), real(e[1]), real(e[2])}, Shape{1, 1, 3}), true);
    hard.align({scores, Tensor(), Var(), Tensor()});
    Var entropy = hard.last().entropy;
    entropy.backward();
    double H = 0;
    for (double ak : a) H -= ak * std::log(ak);
    for (int k = 0; k < 3; ++k) CHECK(std::abs(scores.grad()[k] + a[k] * (std::log(a[k]) + H)) <= 1e-12);
}

// ---- 26. reinforced_alignment -----------------------------------------------------------------------------

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

TEST_CASE("reinforced_alignment: enumerating z, Σ_z p(z) f(z) ∇ log p(z) is exactly ∇ E_z[f(z)]") {
    // Two tokens: the attended sampler keeps z ∈ {0, 1}² with
    // p(z) = Π_l π_l^z_l (1 − π_l)^(1 − z_l), and ∂π_l/∂b_2 = π_l (1 − π_l), so for
    // the reward f(z) = rᵀz, ∂E[f]/∂b_2 = Σ_z f(z) p(z) Σ_l (z_l − π_l). The
    // REINFORCE estimate through log_prob, averaged over the four outcomes, must match.
    // (ReSA's own training loss builds on this log_prob.)
    const std::vector<double> r = {1.5, -0.8};
    Generator data(3);
    const Tensor tokens = Tensor::normal(Shape{1, 2, 2}, 0, 1, data);
    std::vector<double> pi(2);
    const auto gradients = enumerate_outcomes(4, [&](uint64_t seed) {
        Generator gen(5);  // the same sampler weights every time, then the seed's noise
        ReinforcedAlignment resa(2, 3, gen);
        resa.attended.b_2.value()[0] = 0.3;
        gen.manual_seed(seed);
        const ReinforcedAlignment::Selection sel = resa.select(resa.attended, Var(tokens), Tensor::ones(Shape{1, 2}));
        for (int l = 0; l < 2; ++l) pi[static_cast<size_t>(l)] = sel.probs.value()[l];
        Var log_prob = sum(sel.log_prob);
        log_prob.backward();
        const int outcome = static_cast<int>(sel.z[0] + 2 * sel.z[1]);
        return std::pair{outcome, std::vector<double>{resa.attended.b_2.grad()[0]}};
    });
    double estimate = 0, exact = 0;
    for (int outcome = 0; outcome < 4; ++outcome) {
        const double z[2] = {static_cast<double>(outcome % 2), static_cast<double>(outcome / 2)};
        double p = 1, f = 0, score = 0;
        for (int l = 0; l < 2; ++l) {
            p *= z[l] == 1 ? pi[static_cast<size_t>(l)] : 1 - pi[static_cast<size_t>(l)];
            f += r[static_cast<size_t>(l)] * z[l];
            score += z[l] - pi[static_cast<size_t>(l)];
        }
        estimate += p * f * gradients[static_cast<size_t>(outcome)][0];
        exact += f * p * score;
    }
    CHECK(std::abs(estimate - exact) <= 1e-12);
}

TEST_CASE("reinforced_alignment: the policy loss, averaged over every selection, is the exact gradient of E[L + λ·kept]") {
    // One example of three tokens, two of them real. For each z of the real
    // tokens the task loss is L(z) (a table); the reward is r = −(L + λ·kept)
    // and the loss −(r − b)·log p(z). Weighted by p(z), the gradients of the
    // four losses must sum to ∇_θ E_z[L(z) + λ·kept(z)] — the baseline b drops
    // out — which central differences give here independently.
    const double table[4] = {0.9, 0.2, 1.7, 0.4};  // L(z), z = (z_0, z_1) read as z_0 + 2 z_1
    const real lambda = 0.3, baseline = 0.75;
    Generator data(11);
    const Var tokens(Tensor::normal(Shape{1, 3, 2}, 0, 1, data));
    const Tensor valid = Tensor::from({1, 1, 0}, Shape{1, 3});
    Generator gen(13);
    ReinforcedAlignment resa(2, 3, gen);
    Var& theta = resa.attended.W_1;  // any sampler parameter
    const int64_t k = 3;             // the element of W_1 the check differentiates

    auto expected_cost = [&]() {  // E_z[L + λ·kept] under the current parameters
        const Tensor pi = sigmoid(resa.attended.logits(tokens, valid).value());
        double total = 0;
        for (int outcome = 0; outcome < 4; ++outcome) {
            const double z0 = outcome % 2, z1 = outcome / 2;
            const double p = (z0 ? pi[0] : 1 - pi[0]) * (z1 ? pi[1] : 1 - pi[1]);
            total += p * (table[outcome] + lambda * (z0 + z1) / 2);
        }
        return total;
    };
    double estimate = 0;
    const Tensor pi = sigmoid(resa.attended.logits(tokens, valid).value());
    for (int outcome = 0; outcome < 4; ++outcome) {
        const real z0 = outcome % 2, z1 = outcome / 2;
        const ReinforcedAlignment::Selection sel = ReinforcedAlignment::score_selection(
            resa.attended.logits(tokens, valid), valid, Tensor::from({z0, z1, 0}, Shape{1, 3}));
        CHECK(sel.kept[0] == doctest::Approx((z0 + z1) / 2));
        resa.zero_grad();
        Var loss = ReinforcedAlignment::policy_loss(sel, Tensor::from({table[outcome]}), lambda, baseline);
        // its value: −(r − b)·log p(z), r = −(L + λ·kept)
        const double reward = -(table[outcome] + lambda * (z0 + z1) / 2);
        CHECK(loss.item() == doctest::Approx(-(reward - baseline) * sel.log_prob.value()[0]).epsilon(1e-12));
        loss.backward();
        const double p = (z0 ? pi[0] : 1 - pi[0]) * (z1 ? pi[1] : 1 - pi[1]);
        estimate += p * theta.grad()[k];
    }
    const double eps = 1e-6, saved = theta.value()[k];
    theta.value()[k] = saved + eps;
    const double up = expected_cost();
    theta.value()[k] = saved - eps;
    const double down = expected_cost();
    theta.value()[k] = saved;
    CHECK(std::abs(estimate - (up - down) / (2 * eps)) <= 1e-8);
}

TEST_CASE("reinforced_alignment: while keeping all, every real token is kept and nothing is chosen") {
    Generator gen(17);
    ReinforcedAlignment resa(2, 3, gen);
    resa.train();
    resa.set_keep_all(true);
    const Var tokens(Tensor::normal(Shape{2, 4, 2}, 0, 1, gen));
    const Tensor mask = key_mask(Tensor::from({1, 1, 1, 0, 1, 1, 0, 0}, Shape{2, 4}));
    const Var a = resa.align({Var(Tensor::normal(Shape{2, 4, 4}, 0, 1, gen)), mask, tokens, Tensor()});
    for (const auto* sel : {&resa.last_attending(), &resa.last_attended()}) {
        CHECK(sel->z.to_vector() == std::vector<real>{1, 1, 1, 0, 1, 1, 0, 0});
        CHECK(sel->kept.to_vector() == std::vector<real>{1, 1});
        CHECK(sel->log_prob.value().to_vector() == std::vector<real>{0, 0});
    }
    // The policy loss is then zero, whatever the task loss.
    CHECK(resa.policy_loss(Tensor::from({0.5, 2.0}), real(0.1)).item() == 0);
    CHECK_THROWS_WITH_AS(resa.policy_loss(Tensor::from({0.5}), real(0.1)),
                         "reinforced_alignment: policy_loss needs one task loss per example (2), got 1",
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
        for (int64_t l = 0; l < 5; ++l) CHECK(std::as_const(hard).value()[r * 5 + l] == (l == winners[r] ? 1 : 0));
    for (int64_t i = 15; i < 30; ++i) CHECK(std::as_const(hard).value()[i] == 0);  // fully masked: zeros
    const Tensor upstream = Tensor::normal(y.shape(), 0, 1, data);
    y.backward(upstream);
    hard.backward(upstream);
    for (int64_t i = 0; i < 30; ++i) CHECK(std::abs(e1.grad()[i] - e2.grad()[i]) <= 1e-12);
    for (int64_t i = 15; i < 30; ++i) CHECK(e1.grad()[i] == 0);
}

TEST_CASE("gumbel_softmax_alignment: the straight-through backward is the relaxed sample's Jacobian (1/τ)(diag y − y yᵀ)") {
    // Straight-through is a biased estimator, so there is no expected gradient
    // to enumerate; what it promises is ∂L/∂e = J_yᵀ ∂L/∂onehot with y the
    // relaxed sample of the same noise. With log a = e − lse(e) and Σ y = 1,
    // ∂y_k/∂e_j = y_k (δ_kj − y_j) / τ over the kept keys. The noise is replayed
    // from the seed: one uniform per score, in order, g = −log(−log u).
    const double tau = 0.7;
    const int64_t n = 5;
    Generator data(12);
    const Tensor e0 = Tensor::normal(Shape{1, 2, n}, 0, 1, data), upstream = Tensor::normal(Shape{1, 2, n}, 0, 1, data);
    const Tensor mask = key_mask(length_mask({4}, n));  // the last key masked
    for (uint64_t seed : {11, 12, 13}) {
        Generator gen(seed), replay(seed);
        GumbelSoftmaxAlignment st(gen, tau, /*straight_through=*/true);
        Var e(e0.clone(), true);
        Var hard = st.align({e, mask, Var(), Tensor()});
        hard.backward(upstream);
        for (int64_t i = 0; i < 2; ++i) {
            std::vector<double> z(static_cast<size_t>(n)), y(static_cast<size_t>(n), 0.0);
            double lse = 0, top = -INFINITY, total = 0;
            for (int64_t l = 0; l < 4; ++l) lse += std::exp(e0[i * n + l]);
            lse = std::log(lse);
            for (int64_t l = 0; l < n; ++l) {
                const double u = std::max(replay.uniform(), std::numeric_limits<double>::min());
                z[l] = (e0[i * n + l] - lse - std::log(-std::log(u))) / tau;
                if (l < 4) top = std::max(top, z[l]);
            }
            for (int64_t l = 0; l < 4; ++l) total += y[l] = std::exp(z[l] - top);
            for (double& v : y) v /= total;
            for (int64_t j = 0; j < n; ++j) {
                double expected = 0;
                for (int64_t k = 0; k < 4 && j < 4; ++k)
                    expected += upstream[i * n + k] * y[k] * ((k == j ? 1 : 0) - y[j]) / tau;
                CHECK(std::abs(e.grad()[i * n + j] - expected) <= 1e-12);
            }
        }
    }
}
