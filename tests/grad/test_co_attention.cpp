// Co-attention and rotatory attention, catalog entries 3–9 (attention/co_attention.hpp):
// gradient-check cases in the attention registry, and each entry's property
// from the catalog in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/co_attention.hpp"
#include "attention/query_types.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Var co(const CoAttentionOutput& o) { return concat({flat(o.output), flat(o.weights1), flat(o.weights2)}, 0); }

// Lengths (3, 2) over 3 rows and (2, 1) over 2 rows: both batches have padding.
Tensor mask1() { return length_mask({3, 2}, 3); }
Tensor mask2() { return length_mask({2, 1}, 2); }

const RegisterMechanisms co_attention_cases({
    {"alternating_co_attention",
     "3 rows of width 4 and 2 of width 3, padded",
     {Shape{2, 3, 4}, Shape{2, 2, 3}},
     [](Generator& gen) { return std::make_unique<AlternatingCoAttention>(4, 3, 3, gen); },
     [](Module* m, const std::vector<Var>& x) {
         const auto o = as<AlternatingCoAttention>(m).forward(x[0], x[1], mask1(), mask2());
         return concat({co(o), flat(o.weights0)}, 0);
     }},
    {"interactive_co_attention",
     "IAN's activated general scores, padded",
     {Shape{2, 3, 4}, Shape{2, 2, 3}},
     [](Generator& gen) { return std::make_unique<InteractiveCoAttention>(4, 3, gen); },
     [](Module* m, const std::vector<Var>& x) {
         return co(as<InteractiveCoAttention>(m).forward(x[0], x[1], mask1(), mask2()));
     }},
    {"parallel_co_attention",
     "bilinear affinity, padded",
     {Shape{2, 3, 4}, Shape{2, 2, 3}},
     [](Generator& gen) { return std::make_unique<ParallelCoAttention>(4, 3, 3, gen); },
     [](Module* m, const std::vector<Var>& x) {
         const auto o = as<ParallelCoAttention>(m).forward(x[0], x[1], mask1(), mask2());
         return concat({co(o), flat(o.affinity)}, 0);
     }},
    {"parallel_co_attention",
     "trilinear affinity, no mask",
     {Shape{2, 3, 3}, Shape{2, 2, 3}},
     [](Generator& gen) {
         auto affinity = std::make_unique<TrilinearAffinity>(3, gen);
         return std::make_unique<ParallelCoAttention>(std::move(affinity), 3, 3, 2, gen);
     },
     [](Module* m, const std::vector<Var>& x) { return co(as<ParallelCoAttention>(m).forward(x[0], x[1])); }},
    {"trilinear_affinity",
     "vectorised form, 3×2 pairs of width 4",
     {Shape{2, 3, 4}, Shape{2, 2, 4}},
     [](Generator& gen) { return std::make_unique<TrilinearAffinity>(4, gen); },
     [](Module* m, const std::vector<Var>& x) { return as<TrilinearAffinity>(m).affinity(x[0], x[1]); }},
    {"trilinear_affinity",
     "the paper's concatenated form",
     {Shape{1, 2, 3}, Shape{1, 3, 3}},
     [](Generator& gen) { return std::make_unique<TrilinearAffinity>(3, gen); },
     [](Module* m, const std::vector<Var>& x) { return as<TrilinearAffinity>(m).concatenated(x[0], x[1]); }},
    // N(0, 1) affinities have no ties (closer than the checker's step 1e-6) under seed 2024.
    {"max_affinity_co_attention",
     "affinity 3×2, values of widths 2 and 3, padded",
     {Shape{2, 3, 2}, Shape{2, 3, 2}, Shape{2, 2, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         return co(max_affinity_co_attention(x[0], x[1], x[2], mask1(), mask2()));
     }},
    {"multi_grained_co_attention",
     "context 3, aspect 2, width 3, padded",
     {Shape{2, 3, 3}, Shape{2, 2, 3}},
     [](Generator& gen) { return std::make_unique<MultiGrainedCoAttention>(3, gen); },
     [](Module* m, const std::vector<Var>& x) {
         const auto o = as<MultiGrainedCoAttention>(m).forward(x[0], x[1], mask1(), mask2());
         return concat({flat(o.output), flat(o.coarse_context), flat(o.fine_aspect)}, 0);
     }},
    {"rotatory_attention",
     "widths 3, 2, 4, padded",
     {Shape{2, 3, 3}, Shape{2, 2, 2}, Shape{2, 2, 4}},
     [](Generator& gen) { return std::make_unique<RotatoryAttention>(3, 2, 4, gen); },
     [](Module* m, const std::vector<Var>& x) {
         const auto o = as<RotatoryAttention>(m).forward(x[0], x[1], x[2], mask1(), mask2(), mask2());
         return concat({flat(o.output), flat(o.weights_left), flat(o.weights_target_right)}, 0);
     }},
    {"rotatory_attention",
     "two hops",
     {Shape{1, 3, 2}, Shape{1, 2, 2}, Shape{1, 2, 2}},
     [](Generator& gen) { return std::make_unique<RotatoryAttention>(2, 2, 2, gen, 2); },
     [](Module* m, const std::vector<Var>& x) {
         return as<RotatoryAttention>(m).forward(x[0], x[1], x[2]).output;
     }},
});

void check_close(const Tensor& got, const Tensor& want, double atol = 1e-12) {
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
        CHECK(std::abs(got[i] - want[i]) <= atol);
    }
}

void check_equal(const Tensor& got, const Tensor& want) {
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i);
        CHECK(got[i] == want[i]);
    }
}

// Weights at masked positions are exactly 0; each kept row sums to 1.
void check_masked_weights(const Tensor& weights, const Tensor& mask) {
    const int64_t B = weights.size(0), n = weights.size(1);
    for (int64_t b = 0; b < B; ++b) {
        real total = 0;
        for (int64_t l = 0; l < n; ++l) {
            if (mask[b * n + l] == 0) CHECK(weights[b * n + l] == 0);
            total += weights[b * n + l];
        }
        CHECK(total == doctest::Approx(1).epsilon(1e-12));
    }
}

// F with rows in a new order: rows (perm[0], perm[1], ...) of every batch.
Var permute_rows(const Var& f, const std::vector<int64_t>& perm) { return index_select(f, 1, perm); }

Var normal(const Shape& s, Generator& gen) { return Var(Tensor::normal(s, 0, 1, gen)); }

}  // namespace

TEST_CASE("co-attention modules report their multiplicity tag, not singular (entry 2)") {
    Generator gen(2);
    CHECK(AlternatingCoAttention(2, 2, 2, gen).taxonomy().multiplicity == "co-attention");
    CHECK(InteractiveCoAttention(2, 2, gen).taxonomy().multiplicity == "co-attention");
    CHECK(ParallelCoAttention(2, 2, 2, gen).taxonomy().multiplicity == "co-attention");
    CHECK(MultiGrainedCoAttention(2, gen).taxonomy().multiplicity == "co-attention");
    CHECK(RotatoryAttention(2, 2, 2, gen).taxonomy().multiplicity == "rotatory");
    CHECK_FALSE(singular_features_attention(InteractiveCoAttention(2, 2, gen).taxonomy()));
    CHECK(singular_features_attention(ConstantQuerySelfAttention(2, 2, gen).taxonomy()));
}

TEST_CASE("alternating_co_attention: step 1 ignores input 2; W1_q = 0 repeats step 1; c1 depends on F2") {
    Generator gen(3);
    AlternatingCoAttention attention(4, 3, 5, gen);
    const Var F1 = normal({2, 4, 4}, gen), F2 = normal({2, 3, 3}, gen);
    const Tensor m1 = length_mask({4, 2}, 4), m2 = length_mask({3, 1}, 3);
    const auto out = attention.forward(F1, F2, m1, m2);
    CHECK(out.output.shape() == Shape{2, 7});
    check_masked_weights(out.weights0.value(), m1);
    check_masked_weights(out.weights1.value(), m1);
    check_masked_weights(out.weights2.value(), m2);

    // c^(0) does not depend on F^(2)
    const auto other = attention.forward(F1, normal({2, 3, 3}, gen), m1, m2);
    check_equal(other.context0.value(), out.context0.value());
    CHECK(other.context1.value()[0] != out.context1.value()[0]);

    // with W_q^(1) = 0, step 3 is step 1 again
    attention.score1.W_1.value().fill_(0);
    const auto zero = attention.forward(F1, F2, m1, m2);
    check_equal(zero.weights1.value(), zero.weights0.value());

    // the gradient of c^(1) reaches F^(2) through c^(2)
    Generator gen2(4);
    AlternatingCoAttention fresh(4, 3, 5, gen2);
    const Var G2(F2.value(), /*requires_grad=*/true);
    sum(fresh.forward(F1, G2).context1).backward();
    CHECK(max(abs(G2.grad())).item() > 1e-6);
}

TEST_CASE("interactive_co_attention: only the other input's mean enters; padding is left out of the mean") {
    Generator gen(5);
    InteractiveCoAttention attention(4, 3, gen);
    const Var F1 = normal({2, 4, 4}, gen), F2 = normal({2, 3, 3}, gen);
    const Tensor m1 = length_mask({4, 3}, 4), m2 = length_mask({3, 2}, 3);
    const auto out = attention.forward(F1, F2, m1, m2);
    check_masked_weights(out.weights1.value(), m1);
    check_masked_weights(out.weights2.value(), m2);

    // c^(1) is unchanged by any permutation of the rows of F^(2) (here without padding)
    const auto plain = attention.forward(F1, F2);
    const auto permuted = attention.forward(F1, permute_rows(F2, {2, 0, 1}));
    check_close(permuted.context1.value(), plain.context1.value());

    // changing a padded row of F^(2) (batch 1, row 2) changes nothing
    Tensor changed = F2.value().clone();
    for (int64_t k = 0; k < 3; ++k) changed[1 * 9 + 2 * 3 + k] += 7;
    const auto padded = attention.forward(F1, Var(changed), m1, m2);
    check_equal(padded.output.value(), out.output.value());

    // the two directions are independent: computed by hand in the other order, bit-identical
    const Var e2 = attention.score_21().score(masked_mean(F1, m1), F2);
    const Var e1 = attention.score_12().score(masked_mean(F2, m2), F1);
    const Var a2 = softmax(e2, -1, SoftmaxMask::keep(key_mask(m2)));
    const Var a1 = softmax(e1, -1, SoftmaxMask::keep(key_mask(m1)));
    check_equal(reshape(a1, {2, 4}).value(), out.weights1.value());
    check_equal(reshape(a2, {2, 3}).value(), out.weights2.value());
    CHECK(attention.taxonomy().scoring == "activated_general_score");
}

TEST_CASE("parallel_co_attention: W_A = 0 is query-free additive pooling; swapping the inputs swaps the outputs") {
    Generator gen(6);
    ParallelCoAttention attention(4, 3, 5, gen);
    const Var F1 = normal({2, 4, 4}, gen), F2 = normal({2, 3, 3}, gen);
    const Tensor m1 = length_mask({4, 2}, 4), m2 = length_mask({3, 1}, 3);
    const auto out = attention.forward(F1, F2, m1, m2);
    check_masked_weights(out.weights1.value(), m1);
    check_masked_weights(out.weights2.value(), m2);
    // padded rows and columns of A are 0
    CHECK(out.affinity.value()[1 * 12 + 3 * 3 + 0] == 0);
    CHECK(out.affinity.value()[1 * 12 + 0 * 3 + 2] == 0);

    // swap: (F1, F2) → (F2, F1) with W_A → W_Aᵀ, W_1 ↔ W_2, w_1 ↔ w_2
    Generator gen2(7);
    ParallelCoAttention swapped(3, 4, 5, gen2);
    auto& W_A = static_cast<BilinearAffinity&>(attention.affinity()).W_A;
    static_cast<BilinearAffinity&>(swapped.affinity()).W_A.value().copy_(transpose(W_A.value(), 0, 1));
    swapped.W_1.value().copy_(attention.W_2.value());
    swapped.W_2.value().copy_(attention.W_1.value());
    swapped.w_1.value().copy_(attention.w_2.value());
    swapped.w_2.value().copy_(attention.w_1.value());
    const auto back = swapped.forward(F2, F1, m2, m1);
    check_close(back.context1.value(), out.context2.value());
    check_close(back.context2.value(), out.context1.value());
    check_close(back.weights1.value(), out.weights2.value());

    // W_A = 0: each side is entry 35 with b = 0 (e_l = wᵀ tanh(W k_l))
    W_A.value().fill_(0);
    const auto flat_out = attention.forward(F1, F2, m1, m2);
    ConstantQuerySelfAttention pool1(4, 5, gen), pool2(3, 5, gen);
    pool1.W.value().copy_(attention.W_1.value());
    pool1.w.value().copy_(attention.w_1.value());
    pool1.b.value().fill_(0);
    pool2.W.value().copy_(attention.W_2.value());
    pool2.w.value().copy_(attention.w_2.value());
    pool2.b.value().fill_(0);
    check_close(reshape(pool1.forward(F1, m1).output, {2, 4}).value(), flat_out.context1.value());
    check_close(reshape(pool2.forward(F2, m2).weights, {2, 3}).value(), flat_out.weights2.value());
}

TEST_CASE("trilinear_affinity: the vectorised form equals a naive double loop and the concatenated form") {
    Generator gen(8);
    TrilinearAffinity trilinear(3, gen);
    const Var K1 = normal({2, 4, 3}, gen), K2 = normal({2, 5, 3}, gen);
    const Tensor A = trilinear.affinity(K1, K2).value();
    const Tensor w = trilinear.w_A.value(), k1 = K1.value(), k2 = K2.value();
    Tensor naive = Tensor::zeros({2, 4, 5});
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 5; ++j) {
                real a = 0;  // w_Aᵀ [k1_i; k2_j; k1_i ∘ k2_j]
                for (int64_t k = 0; k < 3; ++k) {
                    const real x = k1[(b * 4 + i) * 3 + k], y = k2[(b * 5 + j) * 3 + k];
                    a += w[k] * x + w[3 + k] * y + w[6 + k] * x * y;
                }
                naive[(b * 4 + i) * 5 + j] = a;
            }
    check_close(A, naive);
    check_close(trilinear.concatenated(K1, K2).value(), naive);

    // u = v = 0, z = 1: the dot product K1 K2ᵀ
    trilinear.w_A.value().copy_(Tensor::from({0, 0, 0, 0, 0, 0, 1, 1, 1}));
    check_close(trilinear.affinity(K1, K2).value(), matmul(K1, K2, false, true).value());
    CHECK_THROWS_AS(trilinear.affinity(K1, normal({2, 5, 4}, gen)), std::invalid_argument);
}

TEST_CASE("max_affinity_co_attention: e1 ignores the order of input 2; the gradient reaches A only at the arg-max") {
    Generator gen(9);
    const Var A = normal({1, 3, 4}, gen), V1 = normal({1, 3, 2}, gen), V2 = normal({1, 4, 2}, gen);
    const auto out = max_affinity_co_attention(A, V1, V2);
    const auto permuted =
        max_affinity_co_attention(index_select(A, 2, {3, 1, 0, 2}), V1, permute_rows(V2, {3, 1, 0, 2}));
    check_equal(permuted.weights1.value(), out.weights1.value());
    check_close(permuted.context1.value(), out.context1.value());

    // a tie in row 0 (columns 1 and 3): the gradient goes to column 1, the lowest index
    const Var T(Tensor::from({0.1, 0.9, -0.3, 0.9, 0.5, -1.0, 0.2, 0.4, -0.6, 0.3, 0.8, 0.0}, {1, 3, 4}), true);
    sum(max_affinity_co_attention(T, V1, V2).context1).backward();
    const Tensor g = T.grad();
    const std::vector<int64_t> argmax{1, 0, 2};  // per row
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
            INFO("row " << i << " column " << j);
            if (j == argmax[static_cast<size_t>(i)]) CHECK(g[i * 4 + j] != 0);
            else CHECK(g[i * 4 + j] == 0);
        }
}

TEST_CASE("max_affinity_co_attention: padding gets zero weight; a fully masked input gives zeros, never NaN") {
    Generator gen(10);
    const Var A = normal({2, 3, 2}, gen), V1 = normal({2, 3, 2}, gen), V2 = normal({2, 2, 3}, gen);
    const Tensor m1 = length_mask({3, 1}, 3), m2 = length_mask({1, 0}, 2);
    const auto out = max_affinity_co_attention(A, V1, V2, m1, m2);
    // batch 0: input 2 keeps column 0 only, so e1_i = A_i0
    const Tensor w = out.weights1.value(), a = A.value();
    real z = 0;
    for (int64_t i = 0; i < 3; ++i) z += std::exp(a[i * 2]);
    for (int64_t i = 0; i < 3; ++i) CHECK(w[i] == doctest::Approx(std::exp(a[i * 2]) / z).epsilon(1e-12));
    CHECK(out.weights2.value()[1] == 0);
    // batch 1: input 2 is all padding, so nothing is kept on either side
    for (int64_t k = 0; k < out.output.numel(); ++k) CHECK(std::isfinite(out.output.value()[k]));
    for (int64_t k = 0; k < 3; ++k) CHECK(out.weights1.value()[3 + k] == 0);
    for (int64_t k = 0; k < 5; ++k) CHECK(out.output.value()[5 + k] == 0);
}

TEST_CASE("multi_grained_co_attention: coarse quarters are entry 4 with bilinear scores, F-A2C is entry 7") {
    Generator gen(11);
    MultiGrainedCoAttention mgan(3, gen);
    const Var H = normal({2, 4, 3}, gen), T = normal({2, 2, 3}, gen);
    const Tensor mh = length_mask({4, 3}, 4), mt = length_mask({2, 1}, 2);
    const auto out = mgan.forward(H, T, mh, mt);
    CHECK(out.output.shape() == Shape{2, 12});
    const Tensor y = out.output.value();

    Generator gen2(12);
    auto s12 = std::make_unique<GeneralScore>(3, 3, gen2);
    auto s21 = std::make_unique<GeneralScore>(3, 3, gen2);
    s12->W.value().copy_(static_cast<GeneralScore&>(mgan.coarse().score_12()).W.value());
    s21->W.value().copy_(static_cast<GeneralScore&>(mgan.coarse().score_21()).W.value());
    InteractiveCoAttention ian(std::move(s12), std::move(s21));
    const Tensor coarse = ian.forward(H, T, mh, mt).output.value();  // B×2d
    const Tensor fine =
        max_affinity_co_attention(mgan.fine().affinity(H, T), H, T, mh, mt).context1.value();  // B×d
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t k = 0; k < 3; ++k) {
            CHECK(y[b * 12 + k] == doctest::Approx(coarse[b * 6 + k]).epsilon(1e-12));
            CHECK(y[b * 12 + 3 + k] == doctest::Approx(coarse[b * 6 + 3 + k]).epsilon(1e-12));
            CHECK(y[b * 12 + 6 + k] == doctest::Approx(fine[b * 3 + k]).epsilon(1e-12));
        }

    // F-C2A by hand: q_i = Σ_j softmax_j(U_ij) t_j over the kept aspect words,
    // averaged over the kept context words
    const Tensor U = out.affinity.value(), t = T.value();
    for (int64_t b = 0; b < 2; ++b) {
        const int64_t n = b == 0 ? 4 : 3, nt = b == 0 ? 2 : 1;
        for (int64_t k = 0; k < 3; ++k) {
            real m = 0;
            for (int64_t i = 0; i < n; ++i) {
                real z = 0, q = 0;
                for (int64_t j = 0; j < nt; ++j) z += std::exp(U[(b * 4 + i) * 2 + j]);
                for (int64_t j = 0; j < nt; ++j) q += std::exp(U[(b * 4 + i) * 2 + j]) / z * t[(b * 2 + j) * 3 + k];
                m += q / static_cast<real>(n);
            }
            CHECK(y[b * 12 + 9 + k] == doctest::Approx(m).epsilon(1e-12));
        }
    }
}

TEST_CASE("rotatory_attention: an empty left context gives r^l = 0 and r^lt = the target's mean; no leaks") {
    Generator gen(13);
    RotatoryAttention rot(3, 2, 4, gen);
    const Var L = normal({1, 3, 3}, gen), T = normal({1, 2, 2}, gen), R = normal({1, 4, 4}, gen);
    // n_l = 0 by padding: every left position masked
    const auto out = rot.forward(L, T, R, Tensor::zeros({1, 3}));
    for (int64_t k = 0; k < 3; ++k) CHECK(out.left.value()[k] == 0);
    const Tensor t = T.value();
    for (int64_t k = 0; k < 2; ++k)
        CHECK(out.target_left.value()[k] == doctest::Approx((t[k] + t[2 + k]) / 2).epsilon(1e-12));
    for (int64_t k = 0; k < out.output.numel(); ++k) CHECK(std::isfinite(out.output.value()[k]));

    // a left context with no rows at all
    const auto empty = rot.forward(Var(Tensor::zeros({1, 0, 3})), T, R);
    for (int64_t k = 0; k < 3; ++k) CHECK(empty.left.value()[k] == 0);
    check_close(empty.target_left.value(), out.target_left.value());

    // changing F^r never changes r^l or r^lt
    const auto a = rot.forward(L, T, R), b = rot.forward(L, T, normal({1, 4, 4}, gen));
    check_equal(b.left.value(), a.left.value());
    check_equal(b.target_left.value(), a.target_left.value());
    CHECK(b.right.value()[0] != a.right.value()[0]);

    // a context made of identical rows returns that row
    const Var same(Tensor::from({0.3, -1.2, 0.7, 0.3, -1.2, 0.7, 0.3, -1.2, 0.7}, {1, 3, 3}));
    check_close(rot.forward(same, T, R).left.value(), Tensor::from({0.3, -1.2, 0.7}, {1, 3}));
    CHECK(RotatoryAttention(2, 2, 2, gen, 3).taxonomy().query_multiplicity == "multi-hop");
}

TEST_CASE("co-attention: shape mismatches throw, naming the mechanism and the shapes") {
    Generator gen(14);
    AlternatingCoAttention alt(4, 3, 2, gen);
    const Var F1 = normal({2, 3, 4}, gen), F2 = normal({3, 2, 3}, gen);
    try {
        alt.forward(F1, F2);
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        CHECK(what.find("alternating_co_attention") != std::string::npos);
        CHECK(what.find(F1.shape().str()) != std::string::npos);
        CHECK(what.find(F2.shape().str()) != std::string::npos);
    }
    CHECK_THROWS_AS(ParallelCoAttention(4, 3, 2, gen).forward(F1, normal({2, 2, 5}, gen)), std::invalid_argument);
    CHECK_THROWS_AS(max_affinity_co_attention(normal({2, 3, 3}, gen), F1, normal({2, 2, 3}, gen)),
                    std::invalid_argument);
    CHECK_THROWS_AS(InteractiveCoAttention(4, 3, gen).forward(F1, normal({2, 2, 3}, gen), length_mask({1, 1}, 2)),
                    std::invalid_argument);
}
